"""Ships the kernel packages of ``specs/`` and the reference JavaScript loader inside the wheel.

``specs/`` sits beside the Python packages in the repository (it is data, and a kernel repository has its
own), so no ``package-data`` pattern reaches it. A plain ``pip install .`` still has to certify the shipped
packages from any directory: this build step copies the tree into the built ``conformance`` package, where
:data:`conformance.engine.package.REPO_SPECS` looks first. ``loader/`` is an npm package of its own; the wheel
carries what npm would publish of it (its package.json, README.md and the ``files`` it lists: the modules and
their types, not its tests) as ``conformance/loader/``, where :data:`conformance.config.REPO_LOADER` looks first.
Everything else is declared in ``pyproject.toml``.
"""

import json
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def published_loader_paths(root):
    """What ``npm publish`` takes of the loader package at ``root``: package.json, README.md and its ``files``."""
    with open(os.path.join(root, "package.json"), encoding="utf-8") as f:
        listed = json.load(f)["files"]
    return ["package.json", "README.md", *(p.rstrip("/") for p in listed)]


class BuildPyWithSpecs(build_py):
    def run(self):
        super().run()
        if not self.editable_mode:  # an editable install reads specs/ and loader/ in the checkout itself
            self.copy_tree(os.path.join(HERE, "specs"), os.path.join(self.build_lib, "conformance", "specs"))
            # the reference JavaScript loader: the js-loader column serves it, lint's checks import its entries
            loader, into = os.path.join(HERE, "loader"), os.path.join(self.build_lib, "conformance", "loader")
            for path in published_loader_paths(loader):
                src, dst = os.path.join(loader, path), os.path.join(into, path)
                if os.path.isdir(src):
                    self.copy_tree(src, dst)
                else:
                    self.mkpath(os.path.dirname(dst))
                    self.copy_file(src, dst)


setup(cmdclass={"build_py": BuildPyWithSpecs})
