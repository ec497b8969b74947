"""A client generated from the served OpenAPI document, as a user would make one, drives every
operation of the live api.

``openapi-python-client`` reads ``/api/v1/openapi.json`` and writes a typed client; a document
it misreads shows up here as a missing operation or an answer it cannot parse (once: the
inline enum of ``Stats.bucket`` was named ``StatsBucket`` like a component, so the generator
dropped ``Stats`` and every 200 of ``/stats`` raised ``UnexpectedStatus``). Every operation is
called through the client, with ``raise_on_unexpected_status`` on, and its answer must parse
into the documented model.
"""

from __future__ import annotations

import asyncio
import importlib
import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp
import asyncpg
import pytest
from PIL import Image
from support import MonitorProcess, ensure_account
from support.people import COOKIE, make_password, make_user

from monitor.domain import totp

PASSWORD = "Generated-Pass-8c2e41"

pytestmark = pytest.mark.timeout(120)

GENERATOR = shutil.which("openapi-python-client", path=str(Path(sys.executable).parent))


@pytest.fixture(scope="module")
def generated(api_server: MonitorProcess, tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    if GENERATOR is None:
        pytest.fail("openapi-python-client is not installed (pip install -e '.[test]')")
    root = tmp_path_factory.mktemp("generated")
    document = root / "openapi.json"

    async def fetch() -> bytes:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{api_server.base_url}/api/v1/openapi.json") as response,
        ):
            assert response.status == 200
            return await response.read()

    document.write_bytes(asyncio.run(fetch()))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    # The generator knows no SVG, ICO, PNG or Atom: a user's client reads those answers as bytes.
    config = root / "config.yaml"
    config.write_text(
        "content_type_overrides:\n  image/svg+xml: application/octet-stream\n"
        "  image/x-icon: application/octet-stream\n  image/png: application/octet-stream\n"
        "  application/atom+xml: application/octet-stream\n  application/pdf: application/octet-stream\n"
        "  text/html: application/octet-stream\n"
    )
    done = subprocess.run(
        [GENERATOR, "generate", "--path", str(document), "--output-path", str(root / "monitor_client"),
         "--meta", "none", "--config", str(config)],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module("monitor_client")
    finally:
        sys.path.remove(str(root))


def _op(path: str) -> Any:
    return importlib.import_module(f"monitor_client.api.{path}")


async def test_every_operation_through_the_generated_client(
    generated: ModuleType, api_server: MonitorProcess, api_key: str, db: asyncpg.Connection
) -> None:
    models = importlib.import_module("monitor_client.models")
    client = generated.AuthenticatedClient(
        base_url=api_server.base_url, token=api_key, raise_on_unexpected_status=True
    )
    called: set[str] = set()

    async def call(path: str, *args: Any, status: int = 200, **kwargs: Any) -> Any:
        response = await _op(path).asyncio_detailed(*args, client=client, **kwargs)
        assert response.status_code == status, (path, response.status_code, response.content[:300])
        called.add(path)
        return response.parsed

    async with client:
        assert isinstance(await call("meta.healthz"), models.Health)
        assert isinstance(await call("meta.readyz"), models.Health)
        await call("meta.metrics")
        await call("meta.get_open_api")
        assert isinstance(await call("account.get_summary"), models.Summary)

        body = models.HttpMonitorCreate(name="generated", url="http://127.0.0.1:9/health")
        monitor = await call("monitors.create_monitor", body=body, status=201)
        assert isinstance(monitor, models.Monitor)
        assert isinstance(await call("monitors.list_monitors"), models.MonitorList)
        assert (await call("monitors.get_monitor", monitor.id)).name == "generated"
        changed = await call("monitors.update_monitor", monitor.id, body=models.MonitorPatch(name="renamed"))
        assert changed.name == "renamed"
        await call("monitors.test_monitor", body=body, status=503)  # no scheduler runs here
        assert isinstance(await call("history.list_checks", monitor.id), models.CheckList)
        assert isinstance(await call("history.list_incidents", monitor.id), models.IncidentList)
        incident = await db.fetchval(
            "INSERT INTO incidents (monitor_id, started_at) VALUES ($1, now()) RETURNING id", monitor.id
        )
        assert isinstance(await call("history.get_incident", monitor.id, incident), models.Incident)
        ack = models.IncidentAcknowledge(note="on it")
        acked = await call("history.acknowledge_incident", monitor.id, incident, body=ack)
        assert acked.acknowledged_note == "on it"
        assert isinstance(await call("history.get_uptime", monitor.id), models.Uptime)
        assert isinstance(await call("history.get_stats", monitor.id), models.Stats)
        report = await call(
            "reports.get_sla_report", scope=models.GetSlaReportScope.MONITOR, id=monitor.id,
            quarter="2026-Q4", target=99.9,
        )  # fmt: skip
        assert report.scope == "monitor" and report.summary.target_percent == 99.9
        # A screenshot as a worker's browser check keeps one.
        png = io.BytesIO()
        Image.new("RGB", (8, 8), "white").save(png, "PNG")
        shot = await db.fetchval(
            "INSERT INTO screenshots (monitor_id, role, taken_at, width, height, png)"
            " VALUES ($1, 'latest', now(), 8, 8, $2) RETURNING id",
            monitor.id,
            png.getvalue(),
        )
        assert await call("history.list_screenshots", monitor.id) is not None
        await call("history.get_screenshot", monitor.id, shot)
        assert await call("history.accept_baseline", monitor.id, shot) is not None
        masks = models.MaskList(masks=[models.Mask(x=0, y=0, width=4, height=4)])
        assert await call("history.set_screenshot_masks", monitor.id, body=masks) is not None
        await call("monitors.delete_monitor", monitor.id, status=204)

        # ChannelCreate is a union on `kind`: the generator makes one model per kind.
        settings = models.TelegramSettings(chat_id="-100123")
        channel = await call(
            "channels.create_channel",
            body=models.TelegramChannelCreate(kind="telegram", name="ops", config=settings),
            status=201,
        )
        hook = await call(
            "channels.create_channel",
            body=models.WebhookChannelCreate(
                kind="webhook", name="hook", config=models.WebhookSettings(url="https://hooks.example.com/in")
            ),
            status=201,
        )
        assert hook.config["secret"].startswith("whsec_")  # generated, shown once
        await call("channels.delete_channel", hook.id, status=204)
        assert isinstance(channel, models.Channel)
        assert isinstance(await call("channels.list_channels"), models.ChannelList)
        assert (await call("channels.get_channel", channel.id)).name == "ops"
        patched = await call("channels.update_channel", channel.id, body=models.ChannelPatch(name="on-call"))
        assert patched.name == "on-call"
        assert isinstance(await call("channels.test_channel", channel.id, status=202), models.Accepted)
        await call("channels.delete_channel", channel.id, status=204)

        key = await call("keys.create_key", body=models.KeyCreate(name="generated"), status=201)
        assert isinstance(key, models.NewKey)
        assert isinstance(await call("keys.list_keys"), models.KeyList)
        await call("keys.revoke_key", key.id, status=204)

        await db.execute("INSERT INTO users (email) VALUES ('generated@example.com')")
        added = models.MemberAdd.from_dict({"email": "generated@example.com", "role": "editor"})
        member = await call("members.add_member", body=added, status=201)
        assert isinstance(member, models.Member)
        assert isinstance(await call("members.list_members"), models.MemberList)
        lowered = models.MemberPatch.from_dict({"role": "viewer"})
        assert (await call("members.change_member_role", member.id, body=lowered)).id == member.id
        await call("members.remove_member", member.id, status=204)
        assert isinstance(await call("audit.list_audit"), models.AuditList)

        target = await call("monitors.create_monitor", body=models.HttpMonitorCreate(name="m", url="http://127.0.0.1:9/"),
                            status=201)  # fmt: skip
        schedule = models.RecurringSchedule(rrule="FREQ=WEEKLY;BYDAY=SU;BYHOUR=2", duration_minutes=60,
                                            timezone="Europe/Berlin")  # fmt: skip
        window = await call(
            "maintenance.create_maintenance",
            body=models.MaintenanceCreate(name="patching", recurring=schedule, monitor_ids=[target.id]),
            status=201,
        )
        assert isinstance(window, models.MaintenanceWindow) and window.recurring.timezone == "Europe/Berlin"
        assert isinstance(await call("maintenance.list_maintenance"), models.MaintenanceWindowList)
        try_it = models.MaintenancePreview(recurring=schedule)
        preview = await call("maintenance.preview_maintenance", body=try_it)
        assert isinstance(preview, models.MaintenancePreviewAnswer) and len(preview.items) == 5
        assert (await call("maintenance.get_maintenance", window.id)).name == "patching"
        changed = await call(
            "maintenance.update_maintenance", window.id, body=models.MaintenancePatch(notify=True)
        )
        assert changed.notify is True
        assert [w.id for w in (await call("monitors.get_monitor", target.id)).maintenance] == [window.id]
        await call("maintenance.delete_maintenance", window.id, status=204)

        page = await call(
            "status_pages.create_status_page",
            body=models.StatusPageCreate(slug="generated", title="Generated",
                                         groups=[models.Group(name="web", monitor_ids=[target.id])]),
            status=201,
        )  # fmt: skip
        assert isinstance(await call("status_pages.list_status_pages"), models.StatusPageList)
        assert (await call("status_pages.get_status_page", page.id)).slug == "generated"
        patch = models.StatusPagePatch(show_urls=True)
        shown = await call("status_pages.update_status_page", page.id, body=patch)
        assert shown.show_urls is True
        made = await call(
            "status_pages.create_post", page.id, status=201,
            body=models.PostCreate.from_dict({"title": "Slow", "monitor_ids": [target.id],
                                              "update": {"state": "investigating", "text": "*Looking*"}}),
        )  # fmt: skip
        assert made.updates[0].html == "<p><em>Looking</em></p>\n"
        assert [p.id for p in (await call("status_pages.list_posts", page.id)).items] == [made.id]
        assert (await call("status_pages.get_post", made.id)).title == "Slow"
        patched = await call(
            "status_pages.update_post", made.id, body=models.PostPatch.from_dict({"impact": "major"})
        )
        assert patched.impact == "major"
        update = models.UpdateCreate.from_dict({"state": "resolved", "text": "Fixed"})
        assert (
            await call("status_pages.add_post_update", made.id, body=update, status=201)
        ).state == "resolved"
        await call("public.get_post_page", "generated", str(made.id))
        await call("public.get_status_page_html", "generated")
        await call("public.get_status_page_json", "generated")
        await call("public.get_status_page_feed", "generated")
        await call("public.get_domain_page", status=303)  # the dashboard's sign-in
        await call("public.get_status_css")
        await call("public.get_favicon_svg")
        await call("public.get_favicon")
        await call("public.get_robots_txt")
        badge = (await call("monitors.rotate_badge_token", target.id)).badge_url.rsplit("/", 1)[1]
        await call("public.get_status_badge", badge)
        await call("public.get_window_badge", badge, "uptime", "30d")
        await call("status_pages.delete_post", made.id, status=204)
        await call("status_pages.delete_status_page", page.id, status=204)

        beat = await call(
            "monitors.create_monitor",
            body=models.HeartbeatMonitorCreate(type_="heartbeat", name="cron", interval_seconds=60),
            status=201,
        )
        token = beat.ping_url.rsplit("/", 1)[1]
        kinds = importlib.import_module("monitor_client.models.get_ping_kind_kind").GetPingKindKind
        post_kinds = importlib.import_module("monitor_client.models.post_ping_kind_kind").PostPingKindKind
        log_tail = generated.types.File(payload=b"42 files")  # type: ignore[arg-type]
        await call("heartbeats.get_ping", token)
        await call("heartbeats.get_ping_kind", token, kinds.START)
        await call("heartbeats.post_ping", token, body=log_tail)
        await call("heartbeats.post_ping_kind", token, post_kinds.FAIL, body=log_tail)
        # Single sign-on is not set up for this api: each of its redirects answers 404.
        for sso in ("session.sso_login", "session.sso_callback", "session.sso_proxy"):
            await call(sso, status=404)

        # The api has no mail server: an invitation cannot be sent, a reset is answered alike.
        invite = models.InvitationCreate(email="bo@example.com", role=models.InvitationCreateRole("viewer"))
        await call("members.create_invitation", body=invite, status=503)
        await call(
            "session.request_password_reset", body=models.ResetRequest(email="bo@example.com"), status=202
        )
        unknown = "x" * 43
        await call("session.accept_invitation", body=models.InvitationAccept(token=unknown), status=422)
        reset = models.ResetConfirm(token=unknown, password="Generated-Pass-31d7")
        await call("session.confirm_password_reset", body=reset, status=422)
        files = models.ApplyRequestFiles.from_dict(
            {"m.yaml": "monitors:\n  gen:\n    url: http://127.0.0.1:9/\n"}
        )
        plan = await call("config.apply_config", body=models.ApplyRequest(files=files, dry_run=True))
        assert isinstance(plan, models.ApplyPlan) and plan.counts.create == 1 and plan.applied is False
        assert (await call("config.get_config_schema"))["title"].startswith("monitor configuration")
        # A user exists (the member above): the first run is over.
        assert (await call("session.get_setup")).needs_owner is False
        first = models.FirstOwner(token=unknown, email="ada@example.com", password="Generated-Pass-31d7",
                                  account_name="first")  # fmt: skip
        await call("session.create_first_owner", body=first, status=409)

    # The signed-in person's own operations, with the session cookie (sent by hand: it is Secure).
    await make_user(db, "gen@example.com", PASSWORD, await ensure_account(db))
    anonymous = generated.Client(base_url=api_server.base_url, raise_on_unexpected_status=True)

    async def sign_in() -> Any:
        response = await _op("session.sign_in").asyncio_detailed(
            client=anonymous, body=models.SignIn(email="gen@example.com", password=PASSWORD)
        )
        assert response.status_code == 201, response.content[:300]
        called.add("session.sign_in")
        session_id = response.headers["set-cookie"].split(";", 1)[0].split("=", 1)[1]
        return generated.Client(
            base_url=api_server.base_url,
            cookies={COOKIE: session_id},
            headers={"X-CSRF-Token": response.parsed.csrf_token},
            raise_on_unexpected_status=True,
        )

    async with anonymous:
        client = await sign_in()
        async with client:
            assert (await call("session.get_me")).email == "gen@example.com"
            secret = (await call("session.enrol_totp", status=201)).secret
            confirm = models.TotpConfirm(code=totp.code_at(secret, time.time()))
            assert len((await call("session.confirm_totp", body=confirm)).recovery_codes) == 10
            await call("session.disable_totp", body=models.TotpDisable(password=PASSWORD), status=204)
            change = models.PasswordChange(current_password=PASSWORD, new_password=PASSWORD + "-2")
            assert (await call("session.change_password", body=change)).ended == 0
            await call("session.sign_out", status=204)
        await db.execute("UPDATE users SET password_hash = NULL")  # and back to the first password:
        await make_password(db, "gen@example.com", PASSWORD)
        client = await sign_in()
        async with client:
            assert (await call("session.sign_out_everywhere")).ended == 1

    operations = {
        f"{group.name}.{module.stem}"
        for group in Path(generated.__file__).parent.joinpath("api").iterdir()
        if group.is_dir() and not group.name.startswith("_")
        for module in group.glob("*.py")
        if module.stem != "__init__"
    }
    assert called == operations, {"not called": sorted(operations - called)}
