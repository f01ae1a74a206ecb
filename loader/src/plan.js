// What a planner needs without WebGPU or templates: `import { readManifest, planCall, planSummary }`.
export { readManifest } from "./manifest.js";
export { planCall, planSummary, WGSL_DTYPE } from "./planner.js";
