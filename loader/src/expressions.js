// Manifest expressions evaluated with @huggingface/jinja. Named rules (derive entries, constants) are evaluated
// lazily, when an expression first reads them, and remembered for the call: the same values and the same
// short-circuits (`present.bias and ranks.bias == 1`) as the suite's inlining (conformance/engine/expressions.py).
import { Environment, Interpreter, parse, tokenize } from "@huggingface/jinja";
import { ExpressionError } from "./errors.js";
import { LITERALS, functions } from "./functions.js";

const OPTIONS = { lstrip_blocks: true, trim_blocks: true };
const MAX_SOURCE = 2000;

/** A parsed expression: {node, source, pointer}. A JSON number or boolean stands for itself. */
export function compile(source, pointer, file) {
  if (typeof source === "number" || typeof source === "boolean") {
    return { literal: source, source: String(source), pointer };
  }
  if (typeof source !== "string") {
    throw new ExpressionError(`expected an expression string, number or boolean, got ${typeof source}`,
                              { pointer, file });
  }
  if (source.length > MAX_SOURCE) {
    throw new ExpressionError(`expression is longer than ${MAX_SOURCE} characters`, { pointer, file });
  }
  let program;
  try {
    program = parse(tokenize(`{{ ${source} }}`, OPTIONS));
  } catch (err) {
    throw new ExpressionError(`syntax error: ${err.message}`, { pointer, file, source });
  }
  if (program.body.length !== 1) throw new ExpressionError("not one expression", { pointer, file, source });
  return { node: program.body[0], source, pointer };
}

/** Runtime value -> plain JavaScript (numbers, booleans, strings, arrays, null). */
export function plain(v) {
  if (v === null || v === undefined) return v;
  switch (v.type) {
    case "ArrayValue":
    case "TupleValue":
      return v.value.map(plain);
    case "NullValue":
      return null;
    case "UndefinedValue":
      return undefined;
    case "ObjectValue":
      return Object.fromEntries([...v.value].map(([k, x]) => [k, plain(x)]));
    default:
      return v.value;
  }
}

/** The names of one call (the scope: shapes, ranks, present, dtypes, device, tunables, attributes; the functions;
 * Jinja's literals) as runtime values, name -> value: converted once per call, shared by the scope of every variant
 * the call tries (converting them is most of what a scope costs). */
export function scopeVariables(values, features) {
  const env = new Environment();
  for (const [name, value] of Object.entries({ ...LITERALS, ...values, ...functions(features) })) env.set(name, value);
  return env.variables;
}

/** The names of one call for one variant: `variables` (scopeVariables) and the rules (`rules`: name -> compiled
 * expression), each evaluated once. */
export class Scope extends Environment {
  constructor(variables, rules, file) {
    super();
    this.rules = rules;
    this.file = file;
    this.memo = new Map();
    this.active = new Set();
    this.interpreter = new Interpreter(this);
    for (const [name, value] of variables) this.variables.set(name, value);
  }

  lookupVariable(name) {
    if (this.memo.has(name)) return this.memo.get(name);
    const rule = this.rules.get(name);
    if (rule === undefined) {
      if (!this.variables.has(name)) throw new Error(`undefined name: '${name}' is undefined`);
      return this.variables.get(name);
    }
    if (this.active.has(name)) throw new Error(`rule '${name}' refers to itself`);
    this.active.add(name);
    try {
      const result = rule.literal !== undefined ? literalValue(rule.literal)
                                                : this.interpreter.evaluate(rule.node, this);
      this.memo.set(name, result);
      return result;
    } finally {
      this.active.delete(name);
    }
  }

  /** The expression's value as plain JavaScript; ExpressionError naming the pointer when it fails. */
  evaluate(expr) {
    return plain(this.runtime(expr));
  }

  runtime(expr) {
    if (expr.literal !== undefined) return literalValue(expr.literal);
    let v;
    try {
      v = this.interpreter.evaluate(expr.node, this);
    } catch (err) {
      throw new ExpressionError(String(err.message || err),
                                { pointer: expr.pointer, file: this.file, source: expr.source });
    }
    if (v.type === "UndefinedValue") {
      throw new ExpressionError("the expression's value is undefined (a name or key missing)",
                                { pointer: expr.pointer, file: this.file, source: expr.source });
    }
    return v;
  }

  /** Why a predicate is false: the chain of false rules down to the first false conjunct, as the suite's
   * ContractError says it ("baseOk is false: buffersFit is false: numel(shapes.X) * ... = 4100, ..."). */
  explainFalse(expr) {
    const node = expr.node;
    if (node && node.type === "Identifier" && this.rules.has(node.value)) {
      return `${node.value} is false: ${this.why(this.rules.get(node.value).node)}`;
    }
    return `${node ? unparse(node) : expr.source} is false: ${node ? this.why(node) : "false"}`;
  }

  why(node) {
    if (!node) return "false";
    if (node.type === "Identifier" && this.rules.has(node.value)) {
      return `${node.value} is false: ${this.why(this.rules.get(node.value).node)}`;
    }
    if (node.type === "BinaryExpression" && node.operator.value === "and") {
      const leftTrue = this.interpreter.evaluate(node.left, this).__bool__().value;
      return this.why(leftTrue ? node.right : node.left);
    }
    if (node.type === "BinaryExpression" && node.operator.value === "or") {
      return `${this.why(node.left)}; and ${this.why(node.right)}`;
    }
    const show = (n) => `${unparse(n)} = ${formatValue(plain(this.interpreter.evaluate(n, this)))}`;
    let operands;
    if (node.type === "UnaryExpression") operands = [node.argument];
    else if (node.type === "BinaryExpression" && COMPARISONS.has(node.operator.value)) {
      operands = [node.left, node.right];
    }
    else if (node.type === "CallExpression") operands = node.args;
    else operands = [node];
    // a literal is not shown, as the suite shows none; a negative number is one only here (Jinja2 reads `-1` as
    // the negation of 1)
    const literal = (o) => o.type.endsWith("Literal") && !(typeof o.value === "number" && o.value < 0);
    const shown = operands.filter((o) => !literal(o)).map(show);
    if (node.type === "CallExpression") shown.unshift(show(node));
    return shown.length ? shown.join(", ") : show(node);
  }
}

const LITERAL = new Environment();

/** A JSON literal as a runtime value (Environment.set converts it). */
function literalValue(value) {
  LITERAL.setVariable("v", undefined);
  LITERAL.variables.delete("v");
  LITERAL.set("v", value);
  return LITERAL.variables.get("v");
}

const COMPARISONS = new Set(["==", "!=", "<", "<=", ">", ">=", "in", "not in"]);
const PREC = { Ternary: 1, or: 2, and: 3, not: 4, "==": 5, "!=": 5, "<": 5, "<=": 5, ">": 5, ">=": 5, in: 5,
               "not in": 5, "+": 6, "-": 6, "~": 7, "*": 8, "/": 8, "//": 8, "%": 8, "**": 9 };

function prec(node) {
  if (node.type === "Ternary") return 1;
  if (node.type === "BinaryExpression") return PREC[node.operator.value] ?? 11;
  if (node.type === "UnaryExpression") return node.operator.value === "not" ? 4 : 10;
  return 11;
}

/** An expression tree back to source text, parenthesised only where precedence needs it. */
export function unparse(node) {
  const wrap = (child, min) => (prec(child) < min ? `(${unparse(child)})` : unparse(child));
  const p = prec(node);
  switch (node.type) {
    case "Identifier":
      return node.value;
    case "IntegerLiteral":
    case "FloatLiteral":
      return String(node.value);
    case "StringLiteral":
      return JSON.stringify(node.value);
    case "ArrayLiteral":
      return `[${node.value.map(unparse).join(", ")}]`;
    case "TupleLiteral":
      return `(${node.value.map(unparse).join(", ")})`;
    case "MemberExpression":
      return node.computed ? `${wrap(node.object, 11)}[${unparse(node.property)}]`
                           : `${wrap(node.object, 11)}.${unparse(node.property)}`;
    case "CallExpression":
      return `${wrap(node.callee, 11)}(${node.args.map(unparse).join(", ")})`;
    case "BinaryExpression": {
      const op = node.operator.value;
      const [lp, rp] = op === "**" ? [p + 1, p] : [p, p + 1];
      return `${wrap(node.left, lp)} ${op} ${wrap(node.right, rp)}`;
    }
    case "UnaryExpression":
      return node.operator.value === "not" ? `not ${wrap(node.argument, p)}`
                                           : `${node.operator.value}${wrap(node.argument, p)}`;
    case "Ternary":
      return `${wrap(node.trueExpr, p + 1)} if ${wrap(node.condition, p + 1)} else ${wrap(node.falseExpr, p)}`;
    default:
      return `<${node.type}>`;
  }
}

export function formatValue(v) {
  if (typeof v === "boolean") return v ? "true" : "false";
  if (Array.isArray(v)) return `[${v.join(", ")}]`;
  if (typeof v === "string") return `"${v}"`;
  return String(v);
}
