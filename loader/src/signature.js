// A call's signature: what its plan, its WGSL, its pipelines and its uniform bytes depend on, as one string, the key
// of a kernel's cache (index.js). A kernel is one version of one package on one device whose limits and features it
// reads once, so the signature is what varies from call to call: each input's shape and dtype (or its absence), the
// attributes, the tunable overrides, and the stricter limits and features a call plans for. Data never is.
//
// The key is built from a snapshot of the options (plain copies, read once), and the plan is made from the same
// snapshot, so what was keyed is what was planned. Anything that is not plain data (an options field that is not a
// plain object, a value that is not a number, string, boolean or null, a shape that is not a list of non-negative
// integers) has no key: that call is planned afresh and nothing is cached for it (the planner then accepts or refuses
// it exactly as without a cache).

/** A least-recently-used map of at most `limit` entries; `onEvict(value, key)` is told of each entry it drops. */
export class Lru {
  /** @param {number} limit @param {(value: any, key: any) => void} [onEvict] */
  constructor(limit, onEvict = () => {}) {
    this.limit = limit;
    this.map = new Map();
    this.onEvict = onEvict;
    this.evicted = 0;
  }

  get size() { return this.map.size; }

  get(key) {
    const value = this.map.get(key);
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    return value;
  }

  set(key, value) {
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > this.limit) {
      const [oldest, dropped] = this.map.entries().next().value;
      this.map.delete(oldest);
      this.evicted++;
      this.onEvict(dropped, oldest);
    }
  }

  clear() {
    for (const [key, value] of [...this.map]) {
      this.map.delete(key);
      this.onEvict(value, key);
    }
  }
}

/** A scalar as the key writes it, typed (1, "1" and true differ; -0 is not 0: a float attribute's sign reaches the
 * uniform bytes), or null when it is not a scalar. */
function scalar(v) {
  switch (typeof v) {
    case "number": return Object.is(v, -0) ? "-0" : String(v);
    case "boolean": return v ? "true" : "false";
    case "string": return JSON.stringify(v);
    case "undefined": return "undefined";
    default: return v === null ? "null" : null;
  }
}

const isPlain = (x) => x !== null && typeof x === "object" && !Array.isArray(x) && !ArrayBuffer.isView(x);

/** A plain copy of `x` ({name: scalar}), what both the key and the planner read; `undefined` and `null` (what the
 * planner takes for none) stay themselves; `bad` when it is anything else. */
function snapshotEntries(x) {
  if (x === undefined || x === null) return x;
  if (!isPlain(x)) return BAD;
  const out = {};
  for (const [name, value] of Object.entries(x)) {
    if (scalar(value) === null) return BAD;
    Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** A copy of a features list (strings), or `bad`. */
function snapshotFeatures(x) {
  if (x === undefined || x === null) return x;
  if (!Array.isArray(x) || !x.every((f) => typeof f === "string")) return BAD;
  return [...x];
}

const BAD = Symbol("not plain data");

/** The options of a call as the planner reads them: {attributes, tunables, limits, features, plain}, each a plain
 * copy when it is plain data (`plain`: all of them are); otherwise the caller's own object, which is then planned
 * without a cache. */
export function snapshotOptions(options) {
  const read = { attributes: snapshotEntries(options.attributes), tunables: snapshotEntries(options.tunables),
                 limits: snapshotEntries(options.limits), features: snapshotFeatures(options.features), plain: true };
  for (const field of ["attributes", "tunables", "limits", "features"]) {
    if (read[field] === BAD) {
      read[field] = options[field];
      read.plain = false;
    }
  }
  return read;
}

const entries = (x) => (x === undefined || x === null ? "" : Object.entries(x)
  .map(([name, value]) => `${JSON.stringify(name)}:${scalar(value)}`).join(","));

/** `roles`: the manifest's input roles, in order; `tensors`: role -> {shape, dtype} or null (absent); `read`: what
 * snapshotOptions made. The key of the call's signature, or null when the call has none (nothing is cached). */
export function signatureKey(roles, tensors, read) {
  if (!read.plain) return null;
  let shapes = "";
  let dtypes = "";
  for (const role of roles) {
    const t = Object.hasOwn(tensors, role) ? tensors[role] : null;
    if (t === null || t === undefined) {
      shapes += "-;";
      dtypes += "-;";
      continue;
    }
    const { shape, dtype } = t;
    if (!Array.isArray(shape) || typeof dtype !== "string") return null;
    for (const d of shape) if (!Number.isInteger(d) || d < 0) return null;
    shapes += `${shape.join("x")};`;
    dtypes += `${JSON.stringify(dtype)};`;
  }
  const parts = [
    shapes,                                                          // each input's shape, "-" where absent
    dtypes,                                                          // each input's dtype
    entries(read.attributes),                                        // the attributes, as given
    entries(read.tunables),                                          // the tunable overrides, as given
    entries(read.limits),                                            // the stricter limits the call plans for
    read.features ? JSON.stringify(read.features) : "*",             // the features it plans for (*: the device's)
  ];
  return parts.join("\n");
}
