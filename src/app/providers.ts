import type { Container, ServiceIdentifier } from 'inversify';
import { TrellisError } from '../errors/trellis-error.js';

/**
 * A service the host registers for injection into plugins and middleware, NestJS-style:
 * a class (bound to itself), or `{ provide, useValue | useClass | useFactory }`.
 */
export type Provider =
  | (new (...args: any[]) => object)
  | { readonly provide: ServiceIdentifier; readonly useValue: unknown }
  | { readonly provide: ServiceIdentifier; readonly useClass: new (...args: any[]) => object }
  | { readonly provide: ServiceIdentifier; readonly useFactory: (container: Container) => unknown };

/** Binds providers as singletons in the app's container. */
export function bindProviders(container: Container, providers: readonly Provider[]): void {
  for (const provider of providers) {
    if (typeof provider === 'function') {
      container.bind(provider).toSelf().inSingletonScope();
    } else if ('useValue' in provider) {
      container.bind(provider.provide).toConstantValue(provider.useValue);
    } else if ('useClass' in provider) {
      container.bind(provider.provide).to(provider.useClass).inSingletonScope();
    } else if ('useFactory' in provider) {
      container
        .bind(provider.provide)
        .toDynamicValue(() => provider.useFactory(container))
        .inSingletonScope();
    } else {
      throw new TrellisError(
        'InvalidOptions',
        `A provider is neither a class nor { provide, useValue | useClass | useFactory }: ${JSON.stringify(provider)}`,
        {
          hint: 'Pass classes, or objects with provide and one of useValue, useClass, useFactory',
        },
      );
    }
  }
}
