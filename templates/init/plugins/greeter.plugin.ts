import { IsString, Length } from 'class-validator';
import { Hook, Middleware, Plugin, Requires, RetryMiddleware, Tool, type ToolContext } from 'trellis';

/** The tool's input: the model's arguments are checked against it before `hello` runs. */
export class GreetInput {
  @IsString() @Length(1, 80)
  name!: string;
}

@Plugin({ name: 'greeter', version: '1.0.0', description: 'Greets people in their language' })
export class GreeterPlugin {
  @Tool({ name: 'greeter.hello', input: GreetInput, description: 'Greets a person by name. Use when asked to greet someone.' })
  @Requires('app.locale')
  @Middleware(RetryMiddleware, { maxRetries: 2 })
  hello(input: GreetInput, ctx: ToolContext): string {
    return ctx.deps['app.locale'] === 'fr' ? `Bonjour ${input.name}` : `Hello ${input.name}`;
  }

  @Hook('planning.started')
  rules(instructions: string): string {
    return `${instructions}\nAlways greet people by name.`;
  }
}
