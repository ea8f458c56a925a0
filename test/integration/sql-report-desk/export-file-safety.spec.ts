import {
  existsSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  mkdirSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeExportFile } from '../../../examples/sql-report-desk/safe-export-file.js';

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'trellis-export-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('export files never follow links and never overwrite silently', () => {
  it('writes a new file', () => {
    expect(writeExportFile(join(dir, 'a.csv'), 'x\n', false)).toEqual({ replaced: false });
    expect(readFileSync(join(dir, 'a.csv'), 'utf8')).toBe('x\n');
  });

  it('refuses to replace an existing file unless asked, and says so', () => {
    writeFileSync(join(dir, 'a.csv'), 'old\n');
    expect(() => writeExportFile(join(dir, 'a.csv'), 'new\n', false)).toThrow(
      expect.objectContaining({ code: 'ExportExists', hint: expect.stringContaining('overwrite: true') }),
    );
    expect(readFileSync(join(dir, 'a.csv'), 'utf8')).toBe('old\n');
    expect(writeExportFile(join(dir, 'a.csv'), 'new\n', true)).toEqual({ replaced: true });
    expect(readFileSync(join(dir, 'a.csv'), 'utf8')).toBe('new\n');
  });

  it.each([false, true])(
    'never writes through a planted symlink (overwrite %s): the target stays untouched',
    (overwrite) => {
      const victim = join(dir, 'victim.txt');
      writeFileSync(victim, 'precious\n');
      symlinkSync(victim, join(dir, 'a.csv'));
      expect(() => writeExportFile(join(dir, 'a.csv'), 'evil\n', overwrite)).toThrow(
        expect.objectContaining({ code: 'ExportRefused' }),
      );
      expect(readFileSync(victim, 'utf8')).toBe('precious\n');
      expect(lstatSync(join(dir, 'a.csv')).isSymbolicLink()).toBe(true);
    },
  );

  it('a dangling symlink is refused too: no file is created at its target', () => {
    symlinkSync(join(dir, 'created-elsewhere.txt'), join(dir, 'a.csv'));
    expect(() => writeExportFile(join(dir, 'a.csv'), 'evil\n', false)).toThrow(
      expect.objectContaining({ code: 'ExportRefused' }),
    );
    expect(existsSync(join(dir, 'created-elsewhere.txt'))).toBe(false);
  });

  it('a directory of that name is refused', () => {
    mkdirSync(join(dir, 'a.csv'));
    expect(() => writeExportFile(join(dir, 'a.csv'), 'x', true)).toThrow(
      expect.objectContaining({ code: 'ExportRefused' }),
    );
  });
});
