// The "./jinja" entry: what the loader binds into @huggingface/jinja, for a host that evaluates manifest
// expressions or renders templates with the same engine and must do it as the loader does (the suite's
// portable-subset check, conformance/tools/jinja_js.mjs): the manifest functions and Jinja's literals, and the
// render budget with the interpreter that counts it.
export { LITERALS, WGSL_BYTES, functions } from "./functions.js";
export {
  Budget, BudgetError, BudgetedInterpreter, MAX_OUTPUT, MAX_TEMPLATE, MAX_VALUE, RENDER_WORK_LIMIT, renderBudgeted,
} from "./budget.js";
