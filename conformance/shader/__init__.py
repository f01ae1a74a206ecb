"""WGSL text work that needs no device: the rendered shader and what is read or rewritten in it.

``render`` (a pass's WGSL from its package's Jinja2 template, in the sandbox), ``branches`` (which template
branches the cases render), ``stress`` (the ``--stress`` rewrite of a rendered shader), ``kernel_view`` (the
stores-only check of a shader's output bindings). Imports the engine and the foundation only: ``lint
--no-compile``, ``mutate``'s mutants and the template check reach them without ``conformance.gpu``, which compiles
and dispatches what they give.
"""
