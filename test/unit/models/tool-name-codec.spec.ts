import { encodeToolName, ToolNameCodec } from '../../../src/engine/models/tool-name-codec.js';

describe('tool name encoding', () => {
  it('writes dots as double underscores and other invalid characters as underscores', () => {
    expect(encodeToolName('orders.lookup')).toBe('orders__lookup');
    expect(encodeToolName('db.search:v2')).toBe('db__search_v2');
    expect(encodeToolName('already_valid-name')).toBe('already_valid-name');
  });

  it('decodes the names it sent exactly, even valid names that contain "__"', () => {
    const codec = new ToolNameCodec(['orders.lookup', 'my__tool']);
    expect(codec.decode(codec.encode('orders.lookup'))).toBe('orders.lookup');
    expect(codec.decode('my__tool')).toBe('my__tool');
  });

  it('decodes a name it did not send by turning "__" back into "."', () => {
    expect(new ToolNameCodec([]).decode('billing__charge')).toBe('billing.charge');
  });

  it('refuses two tools whose wire names collide, naming both', () => {
    expect(() => new ToolNameCodec(['a.b', 'a__b'])).toThrow(/"a\.b" and "a__b" both become "a__b".*Rename one/);
  });
});
