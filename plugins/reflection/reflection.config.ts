import { IsArray, IsInt, IsNotEmpty, IsString, Max, Min } from 'class-validator';

/**
 * Configuration of the `reflection` plugin.
 *
 * @example
 * app.install(ReflectionPlugin, { config: { maxLessons: 3 } });
 */
export class ReflectionConfig {
  /** How many lessons the session keeps (the newest); 1 to 50, default 5. */
  @IsInt()
  @Min(1)
  @Max(50)
  maxLessons = 5;

  /** Error messages are cut to this many characters in a lesson; 20 to 2000, default 200. */
  @IsInt()
  @Min(20)
  @Max(2000)
  maxMessageChars = 200;

  /** The line that introduces the lessons in the instructions. */
  @IsString()
  @IsNotEmpty()
  heading = 'Lessons from earlier tool errors in this conversation:';

  /** Error codes that teach nothing (the turn was stopped, not the tool wrong). */
  @IsArray()
  @IsString({ each: true })
  @IsNotEmpty({ each: true })
  ignoreCodes: string[] = ['Interrupted', 'Cancelled'];
}
