/** Built-in tool middleware: retry, timeout, auth, logging, rate limit, cache. */
export { RetryMiddleware, RetryOptions } from './retry.middleware.js';
export { TimeoutMiddleware, TimeoutOptions } from './timeout.middleware.js';
export { AuthMiddleware, AuthOptions } from './auth.middleware.js';
export { LoggingMiddleware, LoggingOptions } from './logging.middleware.js';
export { RateLimitMiddleware, RateLimitOptions } from './rate-limit.middleware.js';
export { CacheMiddleware, CacheOptions } from './cache.middleware.js';
export { TRELLIS_LOGGER, createLogger } from './logger.js';
export type { CreateLoggerOptions } from './logger.js';
export { CLOCK } from './clock.js';
export type { Clock } from './clock.js';
export { DEFAULT_REDACT_KEYS, REDACTED, redact } from './redact.js';
