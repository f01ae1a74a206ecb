"""A JavaScript loader as an implementation under test (``--impl js-loader[:MODULE.mjs]``): ``loader`` (the
implementation), ``plans`` (the loader's plan against the engine's, field by field, and what it dispatched),
``published`` (a package as the card publishes it, the files a loader is handed), ``files`` (what the page server
hands out for a loader; it registers ``page_loader.mjs``, the loader's host in the page), ``runtime`` and
``runtime_host.mjs`` (the same host in Node with Dawn or in Deno with wgpu)."""
