// The budget of one template render. A published package is untrusted: its digests only say it is the one
// published, not that its template ends. Unbounded, `range(200000000)` grows the heap until V8 aborts (the tab
// crashes) and two nested `range(100000)` loops hold the page for hours. So a render may spend the work, and
// build the values and the output, that the suite's Python sandbox allows one render (conformance/gpu/render.py),
// counted by the same code as `lint`'s portable-subset check counts @huggingface/jinja's work (it imports Budget
// and BudgetedInterpreter through the "./jinja" entry: conformance/tools/jinja_js.mjs): a template that check
// rendered within the budget on every generated context renders here too, and an overrun is a BudgetError naming
// the budget it exceeded.
import { Environment, Interpreter } from "@huggingface/jinja";
import { LITERALS } from "./functions.js";

/** The Python sandbox's budgets, by its names (tests/hostile/test_loader_render_budget.py holds them equal). */
export const RENDER_WORK_LIMIT = 1 << 22;   // units of work of one render
export const MAX_VALUE = 1 << 20;           // characters or items of any string or list a render builds
export const MAX_OUTPUT = 1 << 20;          // characters of the rendered text
export const MAX_TEMPLATE = 64 << 10;       // bytes of one template

/** A block run (each loop iteration, each branch taken) costs @huggingface/jinja a fresh scope, about what 64
 * node evaluations cost, so it is charged that: a loop of empty bodies is bounded like any other. */
const BLOCK_UNITS = 64;

/** A render over its budget. `limit`: the budget's name (RENDER_WORK_LIMIT, MAX_VALUE, MAX_OUTPUT, or "engine"
 * for the JavaScript engine's own limits, `cause` the engine's RangeError); `most`: the budget it exceeded;
 * `what` and `length`: the value refused (MAX_VALUE, MAX_OUTPUT). */
export class BudgetError extends Error {
  /** @param {string} message
   * @param {import("../types/jinja.js").BudgetLimit} limit
   * @param {{most?: number | null, what?: string | null, length?: number | null, cause?: unknown}} [details] */
  constructor(message, limit, { most = null, what = null, length = null, cause = undefined } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "BudgetError";
    this.limit = limit;
    this.most = most;
    this.what = what;
    this.length = length;
  }
}

/** The work and the values of one render. `limits` ({work, value, output}; the sandbox's by default): a host
 * that counts another way of running @huggingface/jinja against the same rules may pass the budgets it was
 * given. One Budget may serve several jobs in turn: setting `spent` to 0 starts the next. */
export class Budget {
  spent = 0;

  /** @param {{work?: number, value?: number, output?: number}} [limits] */
  constructor({ work = RENDER_WORK_LIMIT, value = MAX_VALUE, output = MAX_OUTPUT } = {}) {
    this.work = work;
    this.value = value;
    this.output = output;
  }

  charge(units) {
    this.spent += units;
    if (this.spent > this.work) {
      throw new BudgetError(`rendering needs more than ${this.work} units of work (RENDER_WORK_LIMIT, the ` +
                            "suite's budget of one render: a unit per expression node, 64 per block run, one per " +
                            "character or item built): a loop or a range too large", "RENDER_WORK_LIMIT",
                            { most: this.work });
    }
  }

  /** Charges a value of `length` characters or items, refused beyond MAX_VALUE (MAX_OUTPUT for the text).
   * @param {number} length @param {string} what @param {"MAX_VALUE" | "MAX_OUTPUT"} [limit] */
  built(length, what, limit = "MAX_VALUE") {
    const most = limit === "MAX_OUTPUT" ? this.output : this.value;
    if (length > most) {
      throw new BudgetError(`${what} of ${length} characters or items, more than ${most} (${limit}, as in the ` +
                            "suite's sandbox)", limit, { most, what, length });
    }
    this.charge(length);
  }

  /** Jinja's range(), sized and charged before it builds anything. */
  range = (start, stop, step = 1) => {
    if (stop === undefined) [start, stop] = [0, start];
    if (![start, stop, step].every(Number.isInteger) || step === 0) {
      throw new Error("range() takes integers and a step other than 0");
    }
    const count = Math.max(0, Math.ceil((stop - start) / step));
    this.built(count, "range()");
    return Array.from({ length: count }, (_, i) => start + i * step);
  };
}

/** @huggingface/jinja's interpreter, charging every node it evaluates and every block it runs (exported with Budget
 * by the "./jinja" entry, so that lint's check, conformance/tools/jinja_js.mjs, counts with the same code). A
 * subclass, not a patch of the library's prototype: other users of @huggingface/jinja in the page are left as
 * they are. */
// @ts-expect-error: evaluateBlock is private in @huggingface/jinja's types; counting each block run is the point
export class BudgetedInterpreter extends Interpreter {
  constructor(env, budget) {
    super(env);
    this.budget = budget;
  }

  evaluate(node, env) {
    this.budget.charge(1);
    const result = super.evaluate(node, env);
    const v = result?.value;
    if (typeof v === "string" || Array.isArray(v)) {
      const output = node && node.type === "Program";
      this.budget.built(v.length, output ? "the rendered text" : "a value", output ? "MAX_OUTPUT" : "MAX_VALUE");
    }
    return result;
  }

  evaluateBlock(statements, env) {
    this.budget.charge(BLOCK_UNITS);
    // @ts-expect-error: (the same)
    return super.evaluateBlock(statements, env);
  }
}

/** The text of `parsed` (a parsed Template's program) on `context`, within one render's budget (`budget`, a
 * fresh Budget by default): the globals of Template.render that Jinja2 also has, range() bounded. Throws
 * BudgetError on an overrun, the engine's own error otherwise. */
export function renderBudgeted(parsed, context, budget = new Budget()) {
  const env = new Environment();
  const globals = { ...LITERALS, range: budget.range, raise_exception: (message) => { throw new Error(message); } };
  for (const [name, value] of Object.entries({ ...globals, ...context })) env.set(name, value);
  try {
    return new BudgetedInterpreter(env, budget).run(parsed).value;
  } catch (err) {
    if (err instanceof RangeError) {   // a string past V8's longest, or a stack overflow: the engine's own limits
      throw new BudgetError(`the JavaScript engine's own limit: ${err.message}`, "engine", { cause: err });
    }
    throw err;
  }
}
