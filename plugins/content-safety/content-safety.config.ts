import { Type } from 'class-transformer';
import { IsArray, IsBoolean, IsNotEmpty, IsOptional, IsString, Matches, ValidateNested } from 'class-validator';
import { IsPattern } from '../permissions/regex-pattern.js';
import { TOOL_GLOB } from '../permissions/tool-glob.js';

const FLAGS = /^[dgimsuvy]*$/;

/** An extra kind of personal data to redact from replies. */
export class RedactionPattern {
  /** Names the kind of data; the default replacement is `[REDACTED:<name>]`. */
  @IsString()
  @IsNotEmpty()
  @Matches(/^[\w-]+$/, { message: 'name must be letters, digits, _ or -' })
  name!: string;

  /** A regular expression: a literal such as `'/EMP-\\d{6}/'`, or a plain source with `flags`. */
  @IsString()
  @IsPattern('flags')
  matches!: string;

  /** Flags for a plain-source `matches`. Matching is always global. */
  @IsOptional()
  @IsString()
  @Matches(FLAGS, { message: 'flags must be letters of dgimsuvy' })
  flags?: string;

  /** What a match is replaced with; default `[REDACTED:<name>]`. */
  @IsOptional()
  @IsString()
  replacement?: string;
}

/**
 * Configuration of the `content-safety` plugin.
 *
 * @example
 * app.install(ContentSafetyPlugin, { config: {
 *   blockedPatterns: ['/\\bhow to make a bomb\\b/i'],
 *   redactPatterns: [{ name: 'employee-id', matches: 'EMP-\\d{6}' }],
 *   dangerousTools: ['shell.*'],
 * } });
 */
export class ContentSafetyConfig {
  /** Inbound messages matching any of these patterns are blocked before the turn starts. */
  @IsArray()
  @IsString({ each: true })
  @IsPattern(undefined, { each: true })
  blockedPatterns: string[] = [];

  /** The reason a blocked message is given; default names the pattern's index, never the content. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  blockReason?: string;

  /** Redact e-mail addresses from replies. Default true. */
  @IsBoolean()
  redactEmails = true;

  /** Redact phone numbers (`+` and 8–15 digits; 7–12 digits with separators; a bare 10–11) from replies. Default true. */
  @IsBoolean()
  redactPhones = true;

  /** Redact card numbers (13–19 digits that pass the Luhn check) from replies. Default true. */
  @IsBoolean()
  redactCards = true;

  /** Further patterns to redact from replies, applied before the built-in ones (they are more specific). */
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => RedactionPattern)
  redactPatterns: RedactionPattern[] = [];

  /** Tool-name globs (`*`, `?`) of tools that may never run. */
  @IsArray()
  @IsString({ each: true })
  @Matches(TOOL_GLOB, {
    each: true,
    message: 'each of dangerousTools must be a tool-name glob of letters, digits, . _ - and * ?',
  })
  dangerousTools: string[] = [];

  /** Tools carrying any of these tags (`@Tool({ tags })`) may never run. Default `['dangerous']`. */
  @IsArray()
  @IsString({ each: true })
  @IsNotEmpty({ each: true })
  dangerousTags: string[] = ['dangerous'];
}
