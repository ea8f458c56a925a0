import { TrellisError } from '../../errors/trellis-error.js';

/** What OpenAI and Anthropic accept as a tool name. */
const WIRE_NAME = /^[a-zA-Z0-9_-]+$/;
const DOT = /\./g;
const OTHER_INVALID = /[^a-zA-Z0-9_-]/g;
const DOUBLE_UNDERSCORE = /__/g;

/**
 * Writes a Trellis tool name in the form vendors accept (`^[a-zA-Z0-9_-]+$`): each `.`
 * becomes `__` and any other character outside the set becomes `_`. Names that are
 * already valid come back unchanged, without allocating.
 *
 * @example encodeToolName('orders.lookup') // 'orders__lookup'
 */
export function encodeToolName(name: string): string {
  if (WIRE_NAME.test(name)) return name;
  return name.replace(DOT, '__').replace(OTHER_INVALID, '_');
}

/**
 * Maps tool names to their wire form and back for one request. Decoding looks the name up
 * among the tools that were sent, which makes it exact even for names that contain `__`
 * themselves; a name the model invented is decoded by turning `__` back into `.`.
 * Two tools whose wire forms collide (`a.b` and `a__b`) fail loudly instead of mixing up.
 */
export class ToolNameCodec {
  /** Wire name → the Trellis name it was made from, for every tool sent. */
  private readonly originals = new Map<string, string>();

  constructor(names: Iterable<string>) {
    for (const name of names) {
      const wire = encodeToolName(name);
      const owner = this.originals.get(wire);
      if (owner !== undefined && owner !== name) {
        throw new TrellisError(
          'ModelFailed',
          `Tools "${owner}" and "${name}" both become "${wire}" when sent to the model`,
          {
            hint: 'Rename one of them: vendors only accept letters, digits, "_" and "-" in tool names, so "." is sent as "__"',
            details: { tools: [owner, name], wireName: wire },
          },
        );
      }
      this.originals.set(wire, name);
    }
  }

  encode(name: string): string {
    return encodeToolName(name);
  }

  decode(wireName: string): string {
    return this.originals.get(wireName) ?? wireName.replace(DOUBLE_UNDERSCORE, '.');
  }
}
