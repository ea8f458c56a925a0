import { ArrayNotEmpty, IsArray, IsNotEmpty, IsOptional, IsString } from 'class-validator';
import {
  inject,
  injectable,
  type ContextKeySpec,
  MIDDLEWARE_OPTIONS,
  errorResult,
  type NextToolHandler,
  type ToolInvocation,
  type ToolMiddleware,
  type ToolResult,
} from 'trellis/plugin';

const DEFAULT_SCOPES_KEY = 'app.scopes';

/** Options of {@link AuthMiddleware}. */
export class AuthOptions {
  /** Every scope the caller must hold. Required, non-empty. */
  @IsArray()
  @ArrayNotEmpty()
  @IsString({ each: true })
  @IsNotEmpty({ each: true })
  scopes!: string[];

  /** The context key holding the granted scopes. Default `'app.scopes'`. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  scopesKey = DEFAULT_SCOPES_KEY;
}

/**
 * Lets a call through only when the caller holds every required scope. The granted
 * scopes are read from the context key `scopesKey` (a `string[]` or a space-separated
 * string, as in an OAuth `scope` claim), which the host sets, e.g. with
 * `agent.session(id, { context: { 'app.scopes': ['orders:read'] } })`. A denied call never
 * reaches the tool and returns a non-retryable `AuthDenied` result naming what is missing.
 *
 * @example
 * @Middleware(AuthMiddleware, { scopes: ['orders:read'] })
 */
@injectable()
export class AuthMiddleware implements ToolMiddleware {
  static readonly optionsType = AuthOptions;

  /** The scopes key is required context: the kernel resolves it before the call. */
  static requires(options: unknown): readonly ContextKeySpec[] {
    return [(options as Partial<AuthOptions> | undefined)?.scopesKey ?? DEFAULT_SCOPES_KEY];
  }

  private readonly scopes: readonly string[];
  private readonly scopesKey: string;

  constructor(@inject(MIDDLEWARE_OPTIONS) options: AuthOptions) {
    this.scopes = options.scopes;
    this.scopesKey = options.scopesKey ?? DEFAULT_SCOPES_KEY;
  }

  async intercept(call: ToolInvocation, next: NextToolHandler): Promise<ToolResult> {
    const granted = grantedScopes(call.context.get(this.scopesKey));
    const missing = this.scopes.filter((scope) => !granted.has(scope));
    if (missing.length === 0) return next();
    return errorResult(
      'AuthDenied',
      `${call.tool} requires the scope(s) ${missing.join(', ')}, which the context key '${this.scopesKey}' does not grant. ` +
        `Grant them to the caller or do not offer this tool`,
      false,
    );
  }
}

function grantedScopes(value: unknown): ReadonlySet<string> {
  if (typeof value === 'string') return new Set(value.split(/\s+/).filter(Boolean));
  if (Array.isArray(value)) return new Set(value.filter((scope): scope is string => typeof scope === 'string'));
  return new Set();
}
