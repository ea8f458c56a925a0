import semver from 'semver';
import type { JsonSchema } from '../contract/model-provider.js';
import type { PluginContract } from './plugin-contract.js';

/** One difference between two contracts of a plugin. */
export interface ContractChange {
  readonly plugin: string;
  /** `breaking`: a plugin, host or model relying on the old contract may fail against the new one. */
  readonly kind: 'breaking' | 'compatible';
  /** Where: `tool payments.refund input.amount`, `hooks`, `contextKeys.writes`… */
  readonly where: string;
  readonly what: string;
}

/** What `diffContracts` found, per plugin and in all. */
export interface ContractDiff {
  readonly changes: readonly ContractChange[];
  readonly plugins: readonly {
    readonly name: string;
    readonly from?: string;
    readonly to?: string;
    readonly breaking: number;
    readonly compatible: number;
    /** Breaking changes with no major version bump (a minor one for 0.x): CI should fail. */
    readonly unbumped: boolean;
  }[];
  /** False when some plugin has breaking changes without a major version bump. */
  readonly ok: boolean;
}

type Emit = (kind: ContractChange['kind'], where: string, what: string) => void;

/**
 * Classifies every change between two sets of plugin contracts (old, then new) as breaking
 * or compatible. Input schemas may widen (an optional field added, a required one made
 * optional, a type or enum widened, a bound loosened); narrowing them breaks callers. Output
 * schemas may narrow (a field added, an optional one made required); removing or widening a
 * field breaks readers. A tool, hook point, written context key, state key, effect or action
 * handler removed breaks; added is compatible. A new required context read or dependency, or
 * a narrower dependency range, breaks.
 */
export function diffContracts(before: readonly PluginContract[], after: readonly PluginContract[]): ContractDiff {
  const changes: ContractChange[] = [];
  const plugins: ContractDiff['plugins'][number][] = [];
  const old = new Map(before.map((c) => [c.name, c]));
  const next = new Map(after.map((c) => [c.name, c]));
  for (const name of [...new Set([...old.keys(), ...next.keys()])].sort()) {
    const a = old.get(name);
    const b = next.get(name);
    const mine: ContractChange[] = [];
    const emit: Emit = (kind, where, what) => mine.push({ plugin: name, kind, where, what });
    if (!b) emit('breaking', 'plugin', `plugin '${name}' was removed`);
    else if (!a) emit('compatible', 'plugin', `plugin '${name}' was added`);
    else comparePlugin(a, b, emit);
    changes.push(...mine);
    const breaking = mine.filter((c) => c.kind === 'breaking').length;
    plugins.push({
      name,
      ...(a && { from: a.version }),
      ...(b && { to: b.version }),
      breaking,
      compatible: mine.length - breaking,
      unbumped: breaking > 0 && b !== undefined && a !== undefined && !majorBump(a.version, b.version),
    });
  }
  return { changes, plugins, ok: !plugins.some((p) => p.unbumped) };
}

/** A major bump, or for 0.x (where the minor is the breaking digit) a minor one. */
function majorBump(from: string, to: string): boolean {
  const a = semver.coerce(from);
  const b = semver.coerce(to);
  if (!a || !b) return false;
  if (b.major !== a.major) return b.major > a.major;
  return a.major === 0 && b.minor > a.minor;
}

function comparePlugin(a: PluginContract, b: PluginContract, emit: Emit): void {
  if (a.owner !== b.owner)
    emit('compatible', 'owner', `owner changed from ${a.owner ?? 'none'} to ${b.owner ?? 'none'}`);
  const oldTools = new Map(a.tools.map((t) => [t.name, t]));
  const newTools = new Map(b.tools.map((t) => [t.name, t]));
  for (const [name, tool] of oldTools) {
    const now = newTools.get(name);
    if (!now) {
      const renamed = b.tools.find(
        (t) => !oldTools.has(t.name) && JSON.stringify(t.input) === JSON.stringify(tool.input),
      );
      emit(
        'breaking',
        `tool ${name}`,
        `tool '${name}' was removed${renamed ? ` (renamed to '${renamed.name}'?)` : ''}`,
      );
      continue;
    }
    compareSchema(tool.input, now.input, 'input', `tool ${name} input`, emit);
    if (tool.output && !now.output)
      emit('breaking', `tool ${name} output`, 'the output schema was dropped: readers no longer know its shape');
    else if (!tool.output && now.output) emit('compatible', `tool ${name} output`, 'an output schema was declared');
    else if (tool.output && now.output) compareSchema(tool.output, now.output, 'output', `tool ${name} output`, emit);
    setDiff(
      tool.tags,
      now.tags,
      `tool ${name} tags`,
      'tag',
      emit,
      'approval policies and tool filters that match it stop matching',
    );
  }
  for (const name of newTools.keys())
    if (!oldTools.has(name)) emit('compatible', `tool ${name}`, `tool '${name}' was added`);
  setDiff(a.hooks, b.hooks, 'hooks', 'hook point', emit, 'behaviour other plugins relied on at that point is gone');
  setDiff(
    a.contextKeys.writes,
    b.contextKeys.writes,
    'contextKeys.writes',
    'written context key',
    emit,
    'a plugin that declared @Requires on it gets MissingContext',
  );
  const reads = new Map(a.contextKeys.reads.map((r) => [r.key, r.optional]));
  for (const r of b.contextKeys.reads) {
    const was = reads.get(r.key);
    if (was === undefined)
      emit(
        r.optional ? 'compatible' : 'breaking',
        'contextKeys.reads',
        `reads '${r.key}'${r.optional ? ' (optional)' : ' (required): the host or another plugin must now provide it'}`,
      );
    else if (was && !r.optional) emit('breaking', 'contextKeys.reads', `'${r.key}' is required now (was optional)`);
    else if (!was && r.optional) emit('compatible', 'contextKeys.reads', `'${r.key}' is optional now (was required)`);
  }
  for (const r of a.contextKeys.reads)
    if (!b.contextKeys.reads.some((n) => n.key === r.key))
      emit('compatible', 'contextKeys.reads', `no longer reads '${r.key}'`);
  const keys = new Map(b.stateKeys.map((k) => [k.key, k]));
  for (const k of a.stateKeys) {
    const now = keys.get(k.key);
    if (!now) continue; // Reported with the written keys.
    if (now.scope !== k.scope) emit('breaking', `stateKeys ${k.key}`, `scope changed from ${k.scope} to ${now.scope}`);
    if (now.merge !== k.merge) emit('breaking', `stateKeys ${k.key}`, `merge changed from ${k.merge} to ${now.merge}`);
    if (k.persistent && !now.persistent)
      emit('breaking', `stateKeys ${k.key}`, 'no longer persistent: stored values are not read back');
    if (!k.persistent && now.persistent) emit('compatible', `stateKeys ${k.key}`, 'persistent now');
  }
  setDiff(a.effects, b.effects, 'effects', 'effect handler', emit, 'commands emitting it fail with UnknownEffect');
  setDiff(a.actions, b.actions, 'actions', 'action handler', emit, 'commands scheduling it fail with UnknownAction');
  for (const [dep, range] of Object.entries(b.dependsOn)) {
    const was = a.dependsOn[dep];
    if (was === undefined)
      emit('breaking', 'dependsOn', `depends on '${dep}' ${range} now: installs without it are refused`);
    else if (was !== range && !rangeWithin(was, range))
      emit(
        'breaking',
        'dependsOn',
        `the range for '${dep}' changed from ${was} to ${range}, which does not take every version the old one did`,
      );
    else if (was !== range) emit('compatible', 'dependsOn', `the range for '${dep}' widened from ${was} to ${range}`);
  }
  for (const dep of Object.keys(a.dependsOn))
    if (b.dependsOn[dep] === undefined) emit('compatible', 'dependsOn', `no longer depends on '${dep}'`);
}

/** Whether every version `inner` takes, `outer` takes too. */
function rangeWithin(inner: string, outer: string): boolean {
  try {
    return semver.subset(inner, outer, { includePrerelease: true });
  } catch {
    return false;
  }
}

function setDiff(
  before: readonly string[],
  after: readonly string[],
  where: string,
  noun: string,
  emit: Emit,
  why: string,
): void {
  for (const item of before)
    if (!after.includes(item)) emit('breaking', where, `${noun} '${item}' was removed: ${why}`);
  for (const item of after) if (!before.includes(item)) emit('compatible', where, `${noun} '${item}' was added`);
}

type Direction = 'input' | 'output';

/**
 * Compares two JSON Schemas. `input`: the new schema must take everything the old one took
 * (narrowing breaks callers). `output`: the new one must give nothing the old one did not
 * promise (widening or removing breaks readers).
 */
function compareSchema(a: JsonSchema, b: JsonSchema, dir: Direction, where: string, emit: Emit): void {
  const narrowed = (what: string) => emit(dir === 'input' ? 'breaking' : 'compatible', where, what);
  const widened = (what: string) => emit(dir === 'input' ? 'compatible' : 'breaking', where, what);
  const ta = typesOf(a);
  const tb = typesOf(b);
  if (ta && tb) {
    const lost = ta.filter((t) => !tb.includes(t) && !(t === 'integer' && tb.includes('number')));
    const gained = tb.filter((t) => !ta.includes(t) && !(t === 'integer' && ta.includes('number')));
    if (lost.length > 0) narrowed(`type no longer takes ${lost.join(', ')} (was ${ta.join('|')}, now ${tb.join('|')})`);
    if (gained.length > 0)
      widened(`type also takes ${gained.join(', ')} now (was ${ta.join('|')}, now ${tb.join('|')})`);
  } else if (ta && !tb) widened('type is unconstrained now');
  else if (!ta && tb) narrowed(`type is constrained to ${tb.join('|')} now`);
  const ea = a['enum'] as unknown[] | undefined;
  const eb = b['enum'] as unknown[] | undefined;
  if (ea && eb) {
    const removed = ea.filter((v) => !eb.some((w) => JSON.stringify(w) === JSON.stringify(v)));
    const added = eb.filter((v) => !ea.some((w) => JSON.stringify(w) === JSON.stringify(v)));
    if (removed.length > 0) narrowed(`enum no longer has ${removed.map((v) => JSON.stringify(v)).join(', ')}`);
    if (added.length > 0) widened(`enum has ${added.map((v) => JSON.stringify(v)).join(', ')} now`);
  } else if (!ea && eb) narrowed(`values are limited to ${eb.map((v) => JSON.stringify(v)).join(', ')} now`);
  else if (ea && !eb) widened('values are no longer limited to an enum');
  compareBounds(a, b, narrowed, widened);
  const pa = (a['properties'] ?? {}) as Record<string, JsonSchema>;
  const pb = (b['properties'] ?? {}) as Record<string, JsonSchema>;
  const ra = new Set((a['required'] ?? []) as string[]);
  const rb = new Set((b['required'] ?? []) as string[]);
  for (const [field, schema] of Object.entries(pa)) {
    const now = pb[field];
    if (!now) {
      if (dir === 'output')
        emit('breaking', `${where}.${field}`, `field '${field}' was removed: readers of it get nothing`);
      else if (b['additionalProperties'] === false)
        emit(
          'breaking',
          `${where}.${field}`,
          `field '${field}' was removed, and unknown fields are refused: arguments with it fail`,
        );
      else emit('compatible', `${where}.${field}`, `field '${field}' was removed (it is ignored when sent)`);
      continue;
    }
    if (ra.has(field) && !rb.has(field)) widened(`field '${field}' is optional now (was required)`);
    if (!ra.has(field) && rb.has(field)) narrowed(`field '${field}' is required now (was optional)`);
    compareSchema(schema, now, dir, `${where}.${field}`, emit);
  }
  for (const field of Object.keys(pb)) {
    if (pa[field]) continue;
    if (dir === 'input')
      emit(
        rb.has(field) ? 'breaking' : 'compatible',
        `${where}.${field}`,
        `field '${field}' was added${rb.has(field) ? ' as required: calls without it fail' : ' (optional)'}`,
      );
    else emit('compatible', `${where}.${field}`, `field '${field}' was added`);
  }
  if (a['additionalProperties'] !== false && b['additionalProperties'] === false && dir === 'input')
    narrowed('unknown fields are refused now');
  const ia = a['items'] as JsonSchema | undefined;
  const ib = b['items'] as JsonSchema | undefined;
  if (ia && ib && typeof ia === 'object' && typeof ib === 'object') compareSchema(ia, ib, dir, `${where}[]`, emit);
}

const LOWER = ['minimum', 'exclusiveMinimum', 'minLength', 'minItems'] as const;
const UPPER = ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems'] as const;

function compareBounds(
  a: JsonSchema,
  b: JsonSchema,
  narrowed: (what: string) => void,
  widened: (what: string) => void,
): void {
  for (const key of LOWER) {
    const x = a[key] as number | undefined;
    const y = b[key] as number | undefined;
    if (x === y) continue;
    if (y !== undefined && (x === undefined || y > x))
      narrowed(`${key} raised to ${y}${x === undefined ? '' : ` (was ${x})`}`);
    else widened(`${key} lowered${y === undefined ? ' (removed)' : ` to ${y}`} (was ${x})`);
  }
  for (const key of UPPER) {
    const x = a[key] as number | undefined;
    const y = b[key] as number | undefined;
    if (x === y) continue;
    if (y !== undefined && (x === undefined || y < x))
      narrowed(`${key} lowered to ${y}${x === undefined ? '' : ` (was ${x})`}`);
    else widened(`${key} raised${y === undefined ? ' (removed)' : ` to ${y}`} (was ${x})`);
  }
  for (const key of ['pattern', 'format'] as const) {
    const x = a[key];
    const y = b[key];
    if (x === y) continue;
    if (y !== undefined)
      narrowed(`${key} is ${JSON.stringify(y)} now${x === undefined ? '' : ` (was ${JSON.stringify(x)})`}`);
    else widened(`${key} ${JSON.stringify(x)} was removed`);
  }
}

function typesOf(schema: JsonSchema): string[] | undefined {
  const t = schema['type'];
  if (typeof t === 'string') return [t];
  if (Array.isArray(t)) return t.filter((x): x is string => typeof x === 'string');
  return undefined;
}
