"""The web dashboard (issue 29): what a signed-in person sees and does in a browser, served by
``monitor api`` itself at ``/``.

Server-rendered HTML (Jinja2, autoescaped) over the domain layer, as every face is: a page
reads through the same operations the JSON API calls, a form posts to a route that calls the
same ``create``/``update``/``delete``, so no rule is written twice. Every page works without
JavaScript for reading and for plain form posts; small vendored libraries (htmx for partial
updates, uPlot for charts: ``scripts/vendor.py``) enhance it where the browser runs them. The
Content-Security-Policy forbids inline script and style, so every script and stylesheet is a
static file under ``/static/dashboard/``.

- ``web.py``: the request's person and account (the session cookie), the CSRF rule for forms,
  the security headers, errors as pages.
- ``render.py``: the Jinja2 environment and its filters.
- ``assets.py``: the static files, compressed once, at URLs that carry their hash.
- ``routes.py``: the routes, one small module of views per area (``pages_*.py``).
"""
