// Types of the "./jinja" entry, for a host of @huggingface/jinja that must evaluate manifest expressions and
// render templates as the loader does (the suite's portable-subset check): the manifest functions, Jinja's
// literals, the render budget and the interpreter that counts it.
import type { Environment, Interpreter } from "@huggingface/jinja";

/** Jinja's literal names (true, false, none and their capitalised forms), which @huggingface/jinja reads as names. */
export const LITERALS: { readonly [name: string]: boolean | null };

/** Bytes per element by WGSL dtype name. */
export const WGSL_BYTES: { readonly [dtype: string]: number };

/** The manifest functions (numel, dim, dtypeBytes, f16Ok, ceilDiv, min, max); f16Ok bound to `features`. */
export function functions(features: readonly string[], bytes?: { readonly [dtype: string]: number }):
  { [name: string]: (...args: any[]) => unknown };

/** Units of work of one render (a unit per expression node, 64 per block run, one per character or item built). */
export const RENDER_WORK_LIMIT: number;
/** Characters or items of any string or list a render builds. */
export const MAX_VALUE: number;
/** Characters of the rendered text. */
export const MAX_OUTPUT: number;
/** Bytes of one template. */
export const MAX_TEMPLATE: number;

export type BudgetLimit = "RENDER_WORK_LIMIT" | "MAX_VALUE" | "MAX_OUTPUT" | "engine";

/** A render over its budget; "engine": the JavaScript engine's own limit (`cause`: its RangeError). */
export class BudgetError extends Error {
  constructor(message: string, limit: BudgetLimit,
              details?: { most?: number | null; what?: string | null; length?: number | null; cause?: unknown });
  name: "BudgetError";
  limit: BudgetLimit;
  /** The budget exceeded. */
  most: number | null;
  /** The value refused (MAX_VALUE, MAX_OUTPUT) and its length. */
  what: string | null;
  length: number | null;
}

/** The work and the values of one render (the sandbox's budgets by default); `spent = 0` starts the next job. */
export class Budget {
  constructor(limits?: { work?: number; value?: number; output?: number });
  spent: number;
  readonly work: number;
  readonly value: number;
  readonly output: number;
  /** Spends `units`; BudgetError past the work budget. */
  charge(units: number): void;
  /** Charges a value of `length` characters or items; BudgetError past MAX_VALUE (MAX_OUTPUT for the text). */
  built(length: number, what: string, limit?: "MAX_VALUE" | "MAX_OUTPUT"): void;
  /** Jinja's range(), sized and charged before it builds anything. */
  range: (start: number, stop?: number, step?: number) => number[];
}

/** @huggingface/jinja's interpreter charging `budget` for every node it evaluates and every block it runs. */
export class BudgetedInterpreter extends Interpreter {
  constructor(env: Environment, budget: Budget);
  budget: Budget;
}

/** The text of `parsed` (a parsed Template's program) on `context`, within `budget` (a fresh Budget by default).
 * Throws BudgetError on an overrun, the engine's own error otherwise. */
export function renderBudgeted(parsed: object, context: { [name: string]: unknown }, budget?: Budget): string;
