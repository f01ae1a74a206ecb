"""The suite's error types: every failure a user can cause ends in one of these.

Each error carries *where* (a file, a JSON pointer, an argument) and *what was
expected*, so that a message can be acted on without a traceback.
"""

from __future__ import annotations


class ConformanceError(Exception):
    """Base class of every error this project raises on purpose."""


class ManifestError(ConformanceError, ValueError):
    """A manifest (or package) is malformed: names the file and JSON pointer."""

    def __init__(self, message: str, *, file: str | None = None, pointer: str = ""):
        self.file = file
        self.pointer = pointer
        self.detail = message
        where = f"{file or '<manifest>'}:{pointer or '/'}"
        super().__init__(f"{where}: {message}")


class ExpressionError(ConformanceError, ValueError):
    """An expression failed to parse, was refused by the sandbox, or failed to evaluate."""

    def __init__(self, message: str, *, source: str = "", pointer: str = "", file: str | None = None):
        self.source = source
        self.pointer = pointer
        self.file = file
        self.detail = message
        where = ":".join(p for p in (file, pointer) if p)
        prefix = f"{where}: " if where else ""
        shown = f" in expression {source!r}" if source else ""
        super().__init__(f"{prefix}{message}{shown}")


class ContractError(ConformanceError, ValueError):
    """A call breaks the kernel's contract (types, ranks, presence, limits).

    ``reason`` is a short stable key (for example ``"dtype"``, ``"no-variant"``)
    that cases record and tests compare; ``argument`` names the offending argument.
    """

    def __init__(self, message: str, *, reason: str, argument: str | None = None):
        self.reason = reason
        self.argument = argument
        super().__init__(message)


class NoVariantError(ContractError):
    """No variant's ``when`` predicates all hold; ``failures`` maps variant id to the first false predicate."""

    def __init__(self, message: str, *, failures: dict[str, str]):
        self.failures = failures
        super().__init__(message, reason="no-variant")


class TemplateError(ConformanceError):
    """A shader template could not be found, read or rendered (names template and line)."""

    def __init__(self, message: str, *, file: str | None = None):
        self.file = file
        self.detail = message
        super().__init__(f"{file}: {message}" if file else message)


class KernelRuntimeError(ConformanceError, RuntimeError):
    """Compiling or running a pass on the device failed (validation, OOM, device lost, timeout)."""

    def __init__(self, message: str, *, pass_name: str | None = None, kind: str = "runtime"):
        self.pass_name = pass_name
        self.kind = kind
        prefix = f"pass {pass_name}: " if pass_name else ""
        super().__init__(f"{prefix}{message}")


class DeviceError(ConformanceError, RuntimeError):
    """No adapter/device matching the request could be obtained."""


class MissingDependency(ConformanceError, ImportError):
    """A package the command needs is not installed; the message is one line that says what to install."""
