"""A plain Chromium for a heavy check's tests until a test needs the vetting proxy: Playwright
launches Debian's chromium (headless, a throwaway profile) and the run ends it. Implements
``monitor.browser.Browser``; no refusals, since nothing vets its connections."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any


class LocalRun:
    devtools_port = 0

    def __init__(self, browser: Any) -> None:
        self.browser = browser
        self.refusals: list[str] = []

    async def page(self) -> Any:
        return await self.browser.new_page()


class LocalChromium:
    def __init__(self, executable: str) -> None:
        self.executable = executable

    @asynccontextmanager
    async def run(self, timeout: float) -> AsyncIterator[LocalRun]:  # noqa: ASYNC109
        from playwright.async_api import async_playwright

        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=self.executable, headless=True)
            try:
                async with asyncio.timeout(timeout):
                    yield LocalRun(browser)
            finally:
                await browser.close()
