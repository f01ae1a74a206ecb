"""Ships the kernel packages of ``specs/`` inside the wheel, as ``conformance/specs/``.

``specs/`` sits beside the Python packages in the repository (it is data, and a kernel repository has its
own), so no ``package-data`` pattern reaches it. A plain ``pip install .`` still has to certify the shipped
packages from any directory: this build step copies the tree into the built ``conformance`` package, where
:data:`conformance.engine.package.REPO_SPECS` looks first. Everything else is declared in ``pyproject.toml``.
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithSpecs(build_py):
    def run(self):
        super().run()
        if not self.editable_mode:  # an editable install reads specs/ in the checkout itself
            self.copy_tree(os.path.join(HERE, "specs"), os.path.join(self.build_lib, "conformance", "specs"))
            # the reference JavaScript loader: the js-loader column serves it, the portable check imports its functions
            self.copy_tree(os.path.join(HERE, "loader"), os.path.join(self.build_lib, "conformance", "loader"))


setup(cmdclass={"build_py": BuildPyWithSpecs})
