import { ValidationPipe, type ArgumentMetadata, type PipeTransform } from '@nestjs/common';
import { TrellisError } from '../../../../index.js';
import { checkArgumentShape, checkArgumentSize } from '../../../../host.js';
import { toHttpException } from './trellis-http-exception.js';

/** Bodies and queries of the sessions API: nested at most this deep (a decision's `edit` args included). */
const MAX_BODY_DEPTH = 32;

/**
 * The sessions API's validation: the limits tool arguments have first — nesting at most 32
 * deep and no `__proto__` / `constructor` / `prototype` key at any depth, checked by an
 * iterative walk — then the strict `ValidationPipe` (whitelist, unknown fields refused).
 * class-transformer recurses, so a body nested 20,000 deep overflowed the stack (a 500); and
 * it skips `__proto__`, so such a key passed the whitelist. Both are a 400 `InvalidOptions`.
 */
export class BoundedValidationPipe implements PipeTransform {
  readonly #strict = new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true });

  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type === 'body' || metadata.type === 'query') {
      const problems = [checkArgumentSize(value), ...checkArgumentShape(value, { maxDepth: MAX_BODY_DEPTH })].filter(
        (p) => p !== undefined,
      );
      if (problems.length > 0) {
        const lines = problems.map((p) => `- ${p.path}: ${p.messages.join('; ')}`).join('\n');
        throw toHttpException(
          new TrellisError('InvalidOptions', `The request ${metadata.type} is refused:\n${lines}`, {
            hint: `Send a ${metadata.type} nested at most ${MAX_BODY_DEPTH} deep, without __proto__, constructor or prototype keys`,
          }),
        );
      }
    }
    return this.#strict.transform(value, metadata);
  }
}
