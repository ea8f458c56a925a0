/**
 * `trellis/plugins/middleware`: the built-in tool middleware (retry, timeout, auth, logging,
 * rate limit, cache) with their option classes, the structured logger and the clock they
 * use. The six middleware classes are in the root entry `trellis` too. See docs/middleware.md.
 */
export { RetryMiddleware, RetryOptions } from './retry.middleware.js';
export { TimeoutMiddleware, TimeoutOptions } from './timeout.middleware.js';
export { AuthMiddleware, AuthOptions } from './auth.middleware.js';
export { LoggingMiddleware, LoggingOptions } from './logging.middleware.js';
export { RateLimitMiddleware, RateLimitOptions } from './rate-limit.middleware.js';
export { CacheMiddleware, CacheOptions } from './cache.middleware.js';
export { TRELLIS_LOGGER, createLogger, type CreateLoggerOptions } from './logger.js';
export { CLOCK, type Clock } from './clock.js';
export { DEFAULT_REDACT_KEYS } from './redact.js';
