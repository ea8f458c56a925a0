import { closeSync, constants, lstatSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { TrellisError } from 'trellis';

/**
 * Writes an export file without following symbolic links and without silently
 * replacing anything. A new file is created with `O_CREAT | O_EXCL | O_NOFOLLOW`: if the
 * name exists — a file, or a link planted to point elsewhere — nothing is written and an
 * `ExportExists` error says so. With `overwrite`, an existing regular file is replaced
 * through a temporary file and a rename (which replaces the name, never a link's target);
 * a link or anything that is not a regular file is still refused. Returns whether a file
 * was replaced.
 */
export function writeExportFile(path: string, text: string, overwrite: boolean): { readonly replaced: boolean } {
  const existing = lstatOrUndefined(path);
  if (existing?.isSymbolicLink()) {
    throw new TrellisError('ExportRefused', `Refused to write ${path}: it is a symbolic link`, {
      hint: 'Remove the link or export under another file name',
    });
  }
  if (existing && !existing.isFile()) {
    throw new TrellisError('ExportRefused', `Refused to write ${path}: it exists and is not a regular file`, {
      hint: 'Export under another file name',
    });
  }
  if (existing && !overwrite) {
    throw new TrellisError('ExportExists', `${path} already exists; nothing was written`, {
      hint: 'Export under another file name, or call again with overwrite: true to replace it',
    });
  }
  const target = existing ? `${path}.${process.pid}.${Date.now()}.partial` : path;
  writeExclusive(target, text, path);
  if (existing) {
    try {
      renameSync(target, path);
    } catch (error) {
      rmSync(target, { force: true });
      throw error;
    }
  }
  return { replaced: existing !== undefined };
}

function writeExclusive(file: string, text: string, shown: string): void {
  let fd: number;
  try {
    fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  } catch (error) {
    // Created between the check and the open (or a link planted there): still not written.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST' || (error as NodeJS.ErrnoException).code === 'ELOOP') {
      throw new TrellisError('ExportExists', `${shown} appeared while exporting; nothing was written`, {
        hint: 'Export under another file name',
      });
    }
    throw error;
  }
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
