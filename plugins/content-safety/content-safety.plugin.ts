import { inject, Hook, Plugin, block, type HookResult, PLUGIN_CONFIG, type ToolCallInfo } from 'trellis/plugin';
import { toolGlob } from '../permissions/tool-glob.js';
import { compilePattern } from '../permissions/regex-pattern.js';
import { ContentSafetyConfig } from './content-safety.config.js';
import { PiiRedactor } from './pii-redactor.js';

/**
 * Keeps unwanted content out and personal data in.
 *
 * - `message.received` (priority 10): an inbound message matching a `blockedPatterns`
 *   entry is blocked; the turn ends `blocked` without a model call.
 * - `message.sending` (priority 1000, so it sees the reply last): e-mail addresses, phone
 *   numbers, Luhn-valid card numbers and the `redactPatterns` are redacted from the reply
 *   (the transcript keeps the redacted text).
 * - `tool.before_call` (priority 10): a tool named by `dangerousTools` or tagged with one
 *   of `dangerousTags` is blocked; the model gets a `Blocked` result.
 *
 * @example
 * await app.install(ContentSafetyPlugin, { config: { blockedPatterns: ['/password dump/i'], dangerousTools: ['shell.*'] } });
 */
@Plugin({
  name: 'content-safety',
  version: '1.0.0',
  description: 'Blocks configured inbound content, redacts personal data from replies, blocks dangerous tools',
  priority: 10,
  tags: ['policy'],
  config: ContentSafetyConfig,
})
export class ContentSafetyPlugin {
  private readonly blocked: readonly RegExp[];
  private readonly redactor: PiiRedactor;
  private readonly dangerousNames: readonly RegExp[];
  private readonly dangerousTags: ReadonlySet<string>;

  constructor(@inject(PLUGIN_CONFIG) private readonly config: ContentSafetyConfig) {
    this.blocked = config.blockedPatterns.map((p) => compilePattern(p));
    this.redactor = new PiiRedactor(config);
    this.dangerousNames = config.dangerousTools.map(toolGlob);
    this.dangerousTags = new Set(config.dangerousTags);
  }

  @Hook('message.received')
  screen(message: string): HookResult | undefined {
    const index = this.blocked.findIndex((pattern) => pattern.test(message));
    if (index < 0) return undefined;
    return block(this.config.blockReason ?? `the message matches blocked content (blockedPatterns[${index}])`);
  }

  @Hook('message.sending', { priority: 1000 })
  redact(reply: string): string {
    return this.redactor.redact(reply);
  }

  @Hook('tool.before_call')
  guard(call: ToolCallInfo): HookResult | undefined {
    if (this.dangerousNames.some((glob) => glob.test(call.tool)))
      return block(`${call.tool} is listed as dangerous in content-safety's dangerousTools`);
    const tag = call.tags.find((t) => this.dangerousTags.has(t));
    return tag === undefined
      ? undefined
      : block(`${call.tool} is tagged '${tag}', which content-safety treats as dangerous`);
  }
}
