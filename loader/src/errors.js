// The loader's errors. Each names where (file, JSON pointer, argument) and what was expected, like the suite's
// Python errors (conformance/errors.py), so a caller can act on the message without a stack trace.

/** A call breaks the kernel's contract. `reason` is the stable key the suite's golden files record
 * ("no-variant", "dtype", "missing-input", "device-limit", ...); `argument` the offending role, if any;
 * `failures` (reason "no-variant") maps each variant id to its first false predicate. */
export class ContractError extends Error {
  /** @param {string} message
   * @param {{reason?: import("../types/index.js").ContractReason, argument?: string | null,
   *          failures?: {[variant: string]: string} | null}} [details] */
  constructor(message, { reason, argument = null, failures = null } = {}) {
    super(message);
    this.name = "ContractError";
    this.reason = reason;
    this.argument = argument;
    this.failures = failures;
  }
}

/** A manifest expression failed: a defect of the manifest, never a rejection of the call. */
export class ExpressionError extends Error {
  /** @param {string} message
   * @param {{pointer?: string, file?: string, source?: string}} [where] */
  constructor(message, { pointer = "", file = "manifest.json", source = "" } = {}) {
    const shown = source ? ` in expression ${JSON.stringify(source)}` : "";
    super(`${file}:${pointer || "/"}: ${message}${shown}`);
    this.name = "ExpressionError";
    this.pointer = pointer;
    this.file = file;
    this.detail = message;
  }
}

/** The package cannot be used: a file missing or unreadable, a digest that does not match metadata.json, a
 * version that is not published. `file` names the file. */
export class PackageError extends Error {
  /** @param {string} message
   * @param {{file?: string | null}} [where] */
  constructor(message, { file = null } = {}) {
    super(file ? `${file}: ${message}` : message);
    this.name = "PackageError";
    this.file = file;
  }
}

/** WebGPU refused or failed something the plan asked for (compilation, validation, out of memory). */
export class KernelRuntimeError extends Error {
  /** @param {string} message
   * @param {{pass?: string | null}} [where] */
  constructor(message, { pass = null } = {}) {
    super(pass ? `pass ${pass}: ${message}` : message);
    this.name = "KernelRuntimeError";
    this.pass = pass;
  }
}
