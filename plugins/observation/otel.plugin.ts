import type { Context, Span, Tracer, TracerProvider } from '@opentelemetry/api';
import type { Subscription } from 'rxjs';
import {
  inject,
  optional,
  Hook,
  Plugin,
  type InferenceRequest,
  type PluginHost,
  type HookContext,
  type TrellisEvent,
  type InferenceSettings,
  type PluginLifecycle,
  PLUGIN_CONFIG,
  redactText,
} from 'trellis/plugin';
import { GEN_AI, GEN_AI_OPERATION } from './gen-ai-attributes.js';
import { OpenTelemetryConfig } from './otel.config.js';
import { OTEL_TRACER_PROVIDER } from './otel-tokens.js';

/** The open spans of one session; its turns never interleave, so one set suffices. */
interface SessionSpans {
  turn?: Span;
  parent: Context;
  round?: Span;
  /** Whether the open round's request named a model. */
  roundModel?: string;
  readonly tools: Map<string, Span>;
  /** The inference settings `llm.before` saw last, for the next round's request attributes. */
  inference?: InferenceSettings;
}

/**
 * OpenTelemetry spans for turns, model calls and tool calls, with the GenAI semantic
 * conventions, built from the event stream:
 *
 * - turn: `invoke_agent` (INTERNAL), `gen_ai.conversation.id` = session id;
 * - each model call: `chat <model>` (CLIENT), a child of the turn, with
 *   `gen_ai.request.model` (the requested model, else the one that answered),
 *   `gen_ai.response.model`, `gen_ai.usage.input_tokens` / `output_tokens`, and
 *   `trellis.plugins` / `trellis.owners` when it read tools' results (its tokens are theirs);
 * - the turn also carries `trellis.plugins` / `trellis.owners`: who spent anything in it;
 * - each tool call: `execute_tool <tool>` (INTERNAL), a child of the turn, with
 *   `gen_ai.tool.name`, `gen_ai.tool.call.id`, and `error.type` when it failed.
 *
 * The tracer comes from the {@link OTEL_TRACER_PROVIDER} binding, else the global provider.
 * An `llm.before` hook at priority 10000 (after every other) only records the final
 * request's inference settings; it changes nothing.
 */
@Plugin({
  name: 'otel',
  version: '1.0.0',
  description: 'OpenTelemetry spans for turns, model calls and tool calls (GenAI semantic conventions)',
  config: OpenTelemetryConfig,
})
export class OpenTelemetryPlugin implements PluginLifecycle {
  /** `@opentelemetry/api` and the tracer, set in `onInstall` (before any hook or event reaches the plugin). */
  private api!: typeof import('@opentelemetry/api');
  private tracer!: Tracer;
  private readonly sessions = new Map<string, SessionSpans>();
  private subscription: Subscription | undefined;

  constructor(
    @inject(PLUGIN_CONFIG) private readonly config: OpenTelemetryConfig,
    @inject(OTEL_TRACER_PROVIDER) @optional() private readonly provider?: TracerProvider,
  ) {}

  async onInstall(host: PluginHost): Promise<void> {
    // Loaded here rather than when Trellis is imported.
    this.api = await import('@opentelemetry/api');
    this.tracer = (this.provider ?? this.api.trace.getTracerProvider()).getTracer(this.config.tracerName);
    this.subscription = host.events$.subscribe((event) => this.observe(event));
  }

  onUninstall(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    for (const id of [...this.sessions.keys()]) this.closeAll(id, 'uninstalled');
  }

  @Hook('llm.before', { priority: 10_000 })
  recordRequest(request: InferenceRequest, ctx: HookContext): void {
    this.spans(ctx.sessionId).inference = request.inference;
  }

  private observe(event: TrellisEvent): void {
    switch (event.type) {
      case 'turn.started': {
        const spans = this.spans(event.sessionId);
        // A sub-agent's turn nests under the caller's `execute_tool` span of the call it runs for.
        const caller = event.parent && this.sessions.get(event.parent.sessionId)?.tools.get(event.parent.callId);
        const attributes: Record<string, string | number> = {
          [GEN_AI.operationName]: GEN_AI_OPERATION.agent,
          [GEN_AI.conversationId]: event.sessionId,
          [GEN_AI.turnIndex]: event.turn,
        };
        if (event.agent) attributes[GEN_AI.agentName] = event.agent;
        spans.turn = this.tracer.startSpan(
          event.agent ? `invoke_agent ${event.agent}` : 'invoke_agent',
          { kind: this.api.SpanKind.INTERNAL, attributes },
          caller ? this.api.trace.setSpan(this.api.context.active(), caller) : undefined,
        );
        spans.parent = this.api.trace.setSpan(this.api.context.active(), spans.turn);
        return;
      }
      case 'round.started': {
        const spans = this.spans(event.sessionId);
        const inference = spans.inference ?? {};
        spans.inference = undefined;
        const attributes: Record<string, string | number> = {
          [GEN_AI.operationName]: GEN_AI_OPERATION.chat,
          [GEN_AI.conversationId]: event.sessionId,
          [GEN_AI.roundIndex]: event.round,
        };
        if (this.config.providerName) attributes[GEN_AI.providerName] = this.config.providerName;
        if (inference.model) attributes[GEN_AI.requestModel] = inference.model;
        if (inference.temperature !== undefined) attributes[GEN_AI.requestTemperature] = inference.temperature;
        if (inference.maxTokens !== undefined) attributes[GEN_AI.requestMaxTokens] = inference.maxTokens;
        if (inference.topP !== undefined) attributes[GEN_AI.requestTopP] = inference.topP;
        spans.roundModel = inference.model;
        spans.round = this.tracer.startSpan(
          inference.model ? `chat ${inference.model}` : 'chat',
          { kind: this.api.SpanKind.CLIENT, attributes },
          spans.parent,
        );
        return;
      }
      case 'round.finished': {
        const spans = this.sessions.get(event.sessionId);
        const span = spans?.round;
        if (!span) return;
        spans.round = undefined;
        span.setAttribute(GEN_AI.responseModel, event.model);
        span.setAttribute(GEN_AI.inputTokens, event.usage.inputTokens);
        span.setAttribute(GEN_AI.outputTokens, event.usage.outputTokens);
        if (event.usage.cachedInputTokens !== undefined)
          span.setAttribute(GEN_AI.cacheReadInputTokens, event.usage.cachedInputTokens);
        if (event.usage.cacheWriteInputTokens !== undefined)
          span.setAttribute(GEN_AI.cacheCreationInputTokens, event.usage.cacheWriteInputTokens);
        // Whose tool results this call read: its tokens are theirs (usage.byPlugin).
        if (event.causes !== undefined)
          setAttribution(
            span,
            event.causes.map((c) => c.plugin),
            event.causes.flatMap((c) => (c.owner !== undefined ? [c.owner] : [])),
          );
        if (!spans.roundModel) {
          // No explicit model was requested: the provider's default answered.
          span.setAttribute(GEN_AI.requestModel, event.model);
          span.updateName(`chat ${event.model}`);
        }
        span.end();
        return;
      }
      case 'tool.started': {
        const spans = this.spans(event.sessionId);
        const span = this.tracer.startSpan(
          `execute_tool ${event.tool}`,
          {
            kind: this.api.SpanKind.INTERNAL,
            attributes: {
              [GEN_AI.operationName]: GEN_AI_OPERATION.tool,
              [GEN_AI.toolName]: event.tool,
              [GEN_AI.toolCallId]: event.callId,
              [GEN_AI.toolType]: 'function',
            },
          },
          spans.parent,
        );
        spans.tools.set(event.callId, span);
        return;
      }
      case 'tool.finished': {
        const span = this.takeTool(event.sessionId, event.callId);
        if (!span) return;
        if (event.owner !== undefined) {
          span.setAttribute('trellis.plugin', event.plugin!);
          span.setAttribute('trellis.owner', event.owner);
        }
        if (!event.ok) {
          span.setAttribute(GEN_AI.errorType, event.error?.code ?? 'ToolFailed');
          span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: redactText(event.error?.message ?? '') });
        }
        span.end();
        return;
      }
      case 'tool.suspended': {
        const span = this.takeTool(event.sessionId, event.callId);
        span?.setAttribute('trellis.tool.suspended', true);
        span?.end();
        return;
      }
      case 'error': {
        if (!event.sessionId) return;
        const spans = this.sessions.get(event.sessionId);
        const target = spans?.round ?? spans?.turn;
        target?.setAttribute(GEN_AI.errorType, event.code);
        if (event.plugin !== undefined) target?.setAttribute('trellis.error.plugin', event.plugin);
        if (event.owner !== undefined) target?.setAttribute('trellis.error.owner', event.owner);
        target?.setStatus({ code: this.api.SpanStatusCode.ERROR, message: redactText(event.message) });
        return;
      }
      case 'turn.finished': {
        const spans = this.sessions.get(event.sessionId);
        if (spans?.turn) {
          spans.turn.setAttribute(GEN_AI.turnStatus, event.status);
          // The plugins and teams that spent something in the turn.
          if (event.plugins !== undefined) setAttribution(spans.turn, event.plugins, event.owners ?? []);
          if (event.status === 'failed')
            spans.turn.setStatus({ code: this.api.SpanStatusCode.ERROR, message: 'the turn failed' });
        }
        this.closeAll(event.sessionId, event.status);
        return;
      }
      default:
        return;
    }
  }

  private spans(sessionId: string): SessionSpans {
    let spans = this.sessions.get(sessionId);
    if (!spans) this.sessions.set(sessionId, (spans = { parent: this.api.context.active(), tools: new Map() }));
    return spans;
  }

  private takeTool(sessionId: string, callId: string): Span | undefined {
    const tools = this.sessions.get(sessionId)?.tools;
    const span = tools?.get(callId);
    tools?.delete(callId);
    return span;
  }

  /** Ends whatever is still open (a model call that threw, a blocked tool call), then the turn. */
  private closeAll(sessionId: string, reason: string): void {
    const spans = this.sessions.get(sessionId);
    if (!spans) return;
    this.sessions.delete(sessionId);
    for (const span of [spans.round, ...spans.tools.values()]) {
      if (!span) continue;
      span.setAttribute('trellis.unfinished', reason);
      span.end();
    }
    spans.turn?.end();
  }
}

/** `trellis.plugins` and `trellis.owners` (string arrays, each name once) on a span. */
function setAttribution(span: Span, plugins: readonly string[], owners: readonly string[]): void {
  span.setAttribute('trellis.plugins', [...new Set(plugins)]);
  if (owners.length > 0) span.setAttribute('trellis.owners', [...new Set(owners)]);
}
