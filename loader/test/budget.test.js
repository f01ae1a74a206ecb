// The "./jinja" entry: the render budget counted the same way for the loader and for the suite's portable-subset
// check, which imports Budget and BudgetedInterpreter (conformance/tools/jinja_js.mjs); and the manifest functions
// both bind. The counts pinned here are the check's counts too: a change of the rules changes both.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Environment, Template, parse, tokenize } from "@huggingface/jinja";
import {
  Budget, BudgetError, BudgetedInterpreter, LITERALS, MAX_OUTPUT, MAX_TEMPLATE, MAX_VALUE, RENDER_WORK_LIMIT,
  WGSL_BYTES, functions, renderBudgeted,
} from "@webgpu-kernels/loader/jinja";

const rendered = (source, budget = new Budget()) => [renderBudgeted(new Template(source).parsed, {}, budget),
                                                     budget.spent];
const thrown = (fn) => {
  try {
    fn();
  } catch (err) {
    return err;
  }
  assert.fail("no error");
};

describe("the budgets", () => {
  test("are the suite's sandbox budgets (conformance/gpu/render.py)", () => {
    assert.deepEqual([RENDER_WORK_LIMIT, MAX_VALUE, MAX_OUTPUT, MAX_TEMPLATE], [1 << 22, 1 << 20, 1 << 20, 64 << 10]);
    const b = new Budget();
    assert.deepEqual([b.work, b.value, b.output, b.spent], [RENDER_WORK_LIMIT, MAX_VALUE, MAX_OUTPUT, 0]);
  });
  test("a host may pass its own", () => {
    const b = new Budget({ work: 10, value: 3 });
    assert.deepEqual([b.work, b.value, b.output], [10, 3, MAX_OUTPUT]);
  });
});

describe("the count", () => {
  // a unit per node, 64 per block run, one per character or item of every string or list built
  const COUNTS = { "{{ 1 }}": ["1", 67], x: ["x", 68], "{% if true %}ab{% endif %}": ["ab", 138],
                   "{% for i in range(3) %}{{ i }}{% endfor %}": ["012", 276],
                   '{% set s = "ab" ~ "cd" %}{{ s }}': ["abcd", 86] };
  for (const [source, [text, spent]] of Object.entries(COUNTS)) {
    test(JSON.stringify(source), () => assert.deepEqual(rendered(source), [text, spent]));
  }
  test("one Budget serves job after job: spent = 0 starts the next", () => {
    const b = new Budget();
    rendered("{{ 1 }}", b);
    b.spent = 0;
    assert.deepEqual(rendered("{{ 1 }}", b), ["1", 67]);
  });
  test("an expression evaluated alone is counted the same way", () => {
    const b = new Budget();
    const env = new Environment();
    env.set("range", b.range);
    const node = parse(tokenize("{{ range(4) }}", {})).body[0];
    const value = new BudgetedInterpreter(env, b).evaluate(node, env);
    // the call, `range` and `4` (a unit each), the list range() builds (4) and the list the call gives (4)
    assert.deepEqual([value.value.map((v) => v.value), b.spent], [[0, 1, 2, 3], 1 + 1 + 1 + 4 + 4]);
  });
});

describe("an overrun", () => {
  test("of work names RENDER_WORK_LIMIT and the budget", () => {
    const err = thrown(() => rendered("{% for i in range(100) %}{% endfor %}", new Budget({ work: 1000 })));
    assert.ok(err instanceof BudgetError);
    assert.deepEqual([err.name, err.limit, err.most], ["BudgetError", "RENDER_WORK_LIMIT", 1000]);
    assert.match(err.message, /^rendering needs more than 1000 units of work \(RENDER_WORK_LIMIT/);
  });
  test("of a value is refused before it is built: range() is sized first", () => {
    const b = new Budget({ value: 10 });
    const err = thrown(() => b.range(2e9));
    assert.deepEqual([err.limit, err.most, err.what, err.length, b.spent], ["MAX_VALUE", 10, "range()", 2e9, 0]);
    assert.deepEqual(b.range(2, 10, 3), [2, 5, 8]);
    assert.equal(b.spent, 3);
    assert.throws(() => b.range(1.5), (e) => !(e instanceof BudgetError) && /range\(\) takes integers/.test(e.message));
    assert.throws(() => b.range(0, 4, 0), /a step other than 0/);
  });
  test("of the text names MAX_OUTPUT", () => {
    const err = thrown(() => rendered("{{ 'abcdef' }}{{ 'abcdef' }}", new Budget({ output: 10 })));
    assert.deepEqual([err.limit, err.what, err.length, err.most], ["MAX_OUTPUT", "the rendered text", 12, 10]);
  });
  test("of the JavaScript engine's own limits is one too, with the engine's error as its cause", () => {
    const doubled = "{% set s = namespace(t='x') %}{% for i in range(16) %}{% set s.t = s.t ~ s.t %}{% endfor %}";
    const err = thrown(() => rendered(`${doubled}{{ s.t.replace('', s.t) }}`));
    assert.equal(err.limit, "engine");
    assert.ok(err.cause instanceof RangeError, String(err.cause));
  });
});

describe("the manifest functions", () => {
  const f = functions(["shader-f16"]);
  test("compute as specs/README.md says", () => {
    assert.deepEqual([f.numel([2, 3, 4]), f.dim([2, 3], 1), f.dtypeBytes("f16"), f.ceilDiv(10, 4), f.min(3, 1, 2),
                      f.max(3, 1, 2)], [24, 3, 2, 3, 1, 3]);
    assert.deepEqual([f.f16Ok("f16"), f.f16Ok("f32"), functions([]).f16Ok("f16")], [true, true, false]);
    assert.equal(WGSL_BYTES.f32, 4);
    assert.deepEqual([LITERALS.true, LITERALS.None, LITERALS.False], [true, null, false]);
  });
  test("refuse what they do not know, by own properties only", () => {
    assert.throws(() => f.dtypeBytes("constructor"), /dtypeBytes\(\) does not know dtype constructor/);
    assert.throws(() => f.dim([2, 3], 2), /dim\(\) axis 2 is out of range/);
    assert.throws(() => f.ceilDiv(1, 0), /divisor must be positive/);
    assert.throws(() => f.numel(4), /numel\(\) expects a shape/);
  });
});
