"""The implementations under test other than the suite's own runtime, one home each.

The suite certifies implementations of a kernel package's contract; this project's runtime is one of them
(``conformance.certify.implementations.ManifestImplementation``), driven through the same interface as these:

* ``onnxruntime/``: ONNX Runtime's kernels, natively (``native``: ``--impl onnxruntime-cpu``,
  ``onnxruntime-webgpu``; ``models`` the one-node models, ``repro`` their standalone scripts) and in a page
  (``web``: ``--impl onnxruntime-web``, ``onnxruntime-web-jsep``; ``page_ort.mjs`` its page module, ``web_repro``
  its standalone pages);
* ``js_loader/``: a JavaScript loader (``loader``: ``--impl js-loader[:MODULE.mjs]``) in a page or in Node or Deno
  (``runtime`` and ``runtime_host.mjs``), with what it is compared with (``plans``: its plan against the engine's,
  ``published``: a package as the card publishes it) and what the page server hands out for it (``files``,
  ``page_loader.mjs``);
* ``in_page``: the base every implementation that runs in a page shares (the browser of ``--webgpu``, its page,
  commands to it, availability).

A layer of its own, above ``conformance.certify`` (the verdict, which names these only by the entry-point strings of
``BUILTIN``) and below the plugin and the tools. Adding an implementation that runs in a page is one module here
(a subclass of :class:`~conformance.impls.in_page.InPage` that registers its page module with the page server on
import), its ``.mjs``, and one line in ``BUILTIN`` (or an entry point of ``conformance.implementations``).
Nothing is imported here: each implementation loads on selection, with its own optional dependencies.
"""
