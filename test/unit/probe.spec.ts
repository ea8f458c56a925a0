import { make } from '../../src/probe.js';
it('injects', () => { expect(make().dep.v).toBe(42); });
