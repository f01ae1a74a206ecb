"""ONNX Runtime as implementations under test: ``native`` (the CPU and WebGPU execution providers of the Python
package), ``web`` (ONNX Runtime Web in a page, with ``page_ort.mjs``), the one-node ``models`` both run, and the
standalone repros of their failures (``repro`` a script, ``web_repro`` a page). Imported on selection only:
``onnx`` and ``onnxruntime`` are optional."""
