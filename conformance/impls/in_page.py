"""The base of an implementation under test that runs in a page: the browser of ``--webgpu`` and its live page.

An in-page implementation (ONNX Runtime Web, a JavaScript loader) is its own module here, its page module (a
``.mjs`` whose ``commands()`` the page runtime adds to its own on ``["extend", 0, name]``) registered with the
page server when that module is imported (:func:`conformance.gpu.backends.page_modules.register`), and one line
naming its factory (``BUILTIN`` in :mod:`conformance.certify.implementations`, or an entry point). What every one
of them needs of the page is here, once:

* :meth:`InPage.page` opens the browser of ``--webgpu`` (``chromium``, ``firefox``, or a served ``page:<id>``)
  and its live page Session, or says why there is none (:class:`PageUnavailable`);
* :meth:`InPage.call` sends one command and turns a lost page into this call's failure;
* :meth:`InPage.available` asks the implementation's own :meth:`InPage.ensure_page` (the page up with what the
  implementation loads in it) and says why not, in one line;
* :func:`not_installed` says that the npm package the page would load is missing, before a browser opens;
* :func:`adapter_fields` and :meth:`InPage.engine` are the page's adapter and browser as reports show them.

The generic page runtime (``page.py``, ``page_runtime.js``, ``served.py``, the launchers) stays in
``conformance.gpu.backends``: it runs this project's kernels too, and knows no implementation by name.
"""

from __future__ import annotations

import importlib

from conformance.errors import ConformanceError
from conformance.gpu.backends import IMPLEMENTATIONS, PAGE_PREFIX, unavailable
from conformance.gpu.backends.page import WebGPUError, adapter_name
from conformance.gpu.backends.served import PAGES

#: The browsers ``--webgpu`` may name (a served ``page:<id>`` besides).
BROWSERS = ("chromium", "firefox")


class PageUnavailable(ConformanceError):
    """The page could not run the implementation (no browser, no page, a page that went away); the message says
    why."""


class InPage:
    """What an implementation that runs in a page shares: the page of ``--webgpu``, commands to it, availability.

    A subclass sets ``name``, ``webgpu`` and ``runs_what`` (what runs in the page, as the messages name it) and
    defines :meth:`ensure_page`."""

    name: str
    webgpu: str
    #: What runs in the page, as a refusal of a non-browser ``--webgpu`` names it.
    runs_what = "it"

    def ensure_page(self):
        """The live page (or what answers its commands) with what the implementation loads there; raises why not."""
        raise NotImplementedError

    def available(self) -> str | None:
        """None when the page is up with what the implementation needs (:meth:`ensure_page`), else why not."""
        try:
            self.ensure_page()
        except Exception as exc:  # noqa: BLE001 -- any reason the page cannot run the implementation
            return f"{self.name}: {exc}"
        return None

    def page(self):
        """(the browser backend of ``--webgpu``, its live page Session); PageUnavailable saying why there is none."""
        backend = self._browser()
        try:
            return backend, backend.session()
        except WebGPUError as exc:
            raise PageUnavailable(f"{self.name}: no page: {exc}") from None

    def call(self, page, cmd: list):
        """One command to the page; a page that is lost (it did not answer within the backstop, it went away) or
        answered malformed is this call's failure, said as one (the next call gets a fresh page)."""
        try:
            return page.call(cmd)
        except WebGPUError as exc:
            raise PageUnavailable(f"{self.name}: {cmd[0]}: {exc}") from None

    def engine(self, backend) -> str | None:
        """The browser that runs ``backend``'s page ("Chrome 139.0...", "Firefox 140.0"), None where unknown."""
        try:
            return backend.engine if backend is not None else None
        except Exception:  # noqa: BLE001 -- a description is a courtesy
            return None

    def _browser(self):
        """The browser backend of ``--webgpu`` (the one page runtime's owner), started on first use."""
        webgpu = self.webgpu
        if webgpu.startswith(PAGE_PREFIX):
            backend = PAGES.get(webgpu[len(PAGE_PREFIX) :])
            if backend is None:
                raise PageUnavailable(f"no served page {webgpu!r} (pages: {', '.join(PAGES) or 'none'})")
            return backend
        if webgpu not in BROWSERS:
            raise PageUnavailable(
                f"--webgpu={webgpu}: {self.runs_what} runs in a browser; use "
                f"{', '.join('--webgpu=' + b for b in BROWSERS)} or a served page:<id>"
            )
        why = unavailable(webgpu)
        if why:
            raise PageUnavailable(why)
        return importlib.import_module(IMPLEMENTATIONS[webgpu]).default_backend()  # loaded on selection (Playwright)


def not_installed(impl, what: str, missing: str, variable: str) -> str:
    """Why ``impl`` cannot run here: the npm package it loads in the page is missing. Said before a browser opens,
    with how to install it."""
    return (
        f"{impl.name}: {what} is not installed: no node_modules/{missing} (run `npm ci` in the suite's checkout, "
        f"or set {variable} to that package's directory)"
    )


def adapter_fields(adapter: dict | None) -> dict:
    """The page's adapter for the report: ``adapter`` one readable line (never the raw ``adapter.info`` object,
    which the terminal and the HTML would print as a Python dict), ``adapter_info`` that object as the page gave it."""
    info = (adapter or {}).get("info") if isinstance(adapter, dict) else None
    if not isinstance(info, dict) or not info:
        return {"adapter": None}
    return {"adapter": adapter_name(info), "adapter_info": info}
