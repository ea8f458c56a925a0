import { inject, Plugin, Transform, type InferenceRequest, PLUGIN_CONFIG } from 'trellis/plugin';
import { ContextWindowConfig } from './context-window.config.js';
import { trimToWindow } from './trim-to-window.js';

/**
 * Trims each request to the model's context window by estimated tokens (characters over
 * `charsPerToken`). It keeps every system message and the latest turn, and drops older
 * conversation oldest first, never separating a tool message from the assistant message
 * that called it (see {@link trimToWindow}). Its transform runs at priority 1000, after
 * other transforms have added what they add. A request that already fits goes through
 * unchanged; a trimmed one is a new request object.
 *
 * @example
 * await app.install(ContextWindowTransform, { config: { maxTokens: 8000 } });
 */
@Plugin({
  name: 'memory.window',
  version: '1.0.0',
  description: 'Trims requests to the context window by estimated tokens',
  config: ContextWindowConfig,
})
export class ContextWindowTransform {
  constructor(@inject(PLUGIN_CONFIG) private readonly config: ContextWindowConfig) {}

  @Transform({ priority: 1000 })
  trim(request: InferenceRequest): InferenceRequest {
    const messages = trimToWindow(request.messages, this.config.maxTokens, this.config.charsPerToken);
    return messages === request.messages ? request : { ...request, messages };
  }
}
