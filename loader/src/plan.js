// The "./plan" entry: planning without WebGPU or templates, for tools that check or precompute plans (the suite's
// Node planning check, conformance/tools/loader_plan.mjs): a manifest read once, a call planned for a device
// profile, a plan in the form the suite compares. A refused call throws the errors of the "." entry.
export { readManifest } from "./manifest.js";
export { planCall, planSummary, WGSL_DTYPE } from "./planner.js";
