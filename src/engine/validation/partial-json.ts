type Frame =
  | {
      readonly kind: 'object';
      readonly value: Record<string, unknown>;
      key: string | undefined;
      expect: 'key' | 'colon' | 'value' | 'comma';
    }
  | { readonly kind: 'array'; readonly value: unknown[]; expect: 'value' | 'comma' };

const LITERALS: readonly (readonly [string, unknown])[] = [
  ['true', true],
  ['false', false],
  ['null', null],
];
const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

/**
 * The value a prefix of JSON text has so far, read leniently, as a streamed answer is shown
 * while it arrives: open objects and lists hold what was complete in them, a string being
 * written holds its characters so far, a key without its value and a number or literal cut
 * short are left out. Reading stops at the first character that cannot continue JSON.
 * Linear in the text, iterative (no recursion), and nesting past `maxDepth` is not read.
 *
 * @returns the value, or undefined when the text does not start a JSON value.
 * @example
 * parsePartialJson('{"title":"Q3 rev') // { title: 'Q3 rev' }
 * parsePartialJson('{"rows":[1,2')     // { rows: [1, 2] }
 */
export function parsePartialJson(text: string, maxDepth = 64): unknown {
  const stack: Frame[] = [];
  let root: unknown;
  let at = 0;
  const put = (value: unknown): void => {
    const top = stack[stack.length - 1];
    if (top === undefined) root = value;
    else if (top.kind === 'array') top.value.push(value);
    else if (top.key !== undefined) define(top.value, top.key, value);
    if (top !== undefined) top.expect = 'comma';
  };
  while (true) {
    while (at < text.length && /\s/.test(text[at]!)) at++;
    if (at >= text.length) break;
    const c = text[at]!;
    const top = stack[stack.length - 1];
    if (top === undefined && root !== undefined) break;
    if (top?.kind === 'object' && top.expect !== 'value') {
      if (c === '}' && top.expect !== 'colon') {
        stack.pop();
        at++;
        continue;
      }
      if (top.expect === 'comma') {
        if (c !== ',') break;
        top.expect = 'key';
        at++;
        continue;
      }
      if (top.expect === 'colon') {
        if (c !== ':') break;
        top.expect = 'value';
        at++;
        continue;
      }
      if (c !== '"') break;
      const key = readString(text, at + 1);
      if (!key.closed) break;
      top.key = key.value;
      top.expect = 'colon';
      at = key.end;
      continue;
    }
    if (top?.kind === 'array') {
      if (c === ']') {
        stack.pop();
        at++;
        continue;
      }
      if (top.expect === 'comma') {
        if (c !== ',') break;
        top.expect = 'value';
        at++;
        continue;
      }
    }
    // A value: the root, an item, or an object's property.
    if (c === '{' || c === '[') {
      if (stack.length >= maxDepth) break;
      const frame: Frame =
        c === '{'
          ? { kind: 'object', value: {}, key: undefined, expect: 'key' }
          : { kind: 'array', value: [], expect: 'value' };
      put(frame.value);
      stack.push(frame);
      at++;
      continue;
    }
    if (c === '"') {
      const read = readString(text, at + 1);
      put(read.value);
      if (!read.closed) break;
      at = read.end;
      continue;
    }
    const literal = LITERALS.find(([word]) => text.startsWith(word, at));
    if (literal !== undefined) {
      put(literal[1]);
      at += literal[0].length;
      continue;
    }
    let end = at;
    while (end < text.length && /[-+.eE\d]/.test(text[end]!)) end++;
    // A number that runs to the end of the text may not be finished: left out.
    if (end === at || end === text.length || !NUMBER.test(text.slice(at, end))) break;
    put(Number(text.slice(at, end)));
    at = end;
  }
  return root;
}

/** A JSON string from just after its opening quote: its characters so far, whether it closed, and where it ended. */
function readString(text: string, from: number): { value: string; closed: boolean; end: number } {
  let value = '';
  let at = from;
  while (at < text.length) {
    const c = text[at]!;
    if (c === '"') return { value, closed: true, end: at + 1 };
    if (c !== '\\') {
      // Runs of plain characters are copied at once.
      let run = at + 1;
      while (run < text.length && text[run] !== '"' && text[run] !== '\\') run++;
      value += text.slice(at, run);
      at = run;
      continue;
    }
    const escape = text[at + 1];
    if (escape === undefined) break;
    if (escape === 'u') {
      const hex = text.slice(at + 2, at + 6);
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) break;
      value += String.fromCharCode(parseInt(hex, 16));
      at += 6;
      continue;
    }
    value += ESCAPES[escape] ?? escape;
    at += 2;
  }
  return { value, closed: false, end: at };
}

function define(target: Record<string, unknown>, key: string, value: unknown): void {
  // An own `__proto__` key stays a plain property.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
