// Types of the "./plan" entry, for tools that plan without WebGPU: a manifest read once, a call planned for a
// device profile, a plan in the form the suite compares. A refused call throws ContractError, a manifest defect
// ExpressionError (the "." entry's classes; match them by `name`).
import type { Dtype, PlanSummary } from "./index.js";

/** A manifest read for planning: every expression parsed once, variants by priority. */
export interface Manifest {
  readonly raw: object;
  readonly file: string;
  readonly opId: string;
  readonly version: number;
  readonly shaders: string[];
}

/** A device to plan for. */
export interface Profile {
  limits: { [name: string]: number };
  features: Iterable<string>;
}

export interface PlanOptions {
  profile: Profile;
  attributes?: { [name: string]: number | boolean };
  tunables?: { [name: string]: number };
}

/** A plan: what planSummary() writes, and what rendering and dispatch read. */
export interface Plan {
  readonly op: string;
  readonly variant: string;
  readonly passes: readonly object[];
  readonly outputs: { [role: string]: { role: string; shape: number[]; dtype: string } };
}

/** Reads `raw` (a manifest's JSON); `file` is what errors name. Throws ExpressionError. */
export function readManifest(raw: unknown, file?: string): Manifest;

/** The plan of a call: `inputs` by role, each {shape, dtype} (a manifest or WGSL dtype name) or null when absent.
 * Throws ContractError for a refused call, ExpressionError for a defect of the manifest. */
export function planCall(manifest: Manifest,
                         inputs: { [role: string]: { shape: number[]; dtype: Dtype | string } | null },
                         options: PlanOptions): Plan;

/** A plan as the suite's Plan.as_dict() writes it, with each pass's constants. */
export function planSummary(plan: Plan): PlanSummary;

/** Manifest dtype name -> WGSL name. */
export const WGSL_DTYPE: { readonly [dtype in Dtype]: string };

export type { PlanSummary } from "./index.js";
