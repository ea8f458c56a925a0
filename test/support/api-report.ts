/**
 * The public API report: every exported name of every entry in package.json's `exports`, with
 * its kind and its declaration as the published `.d.ts` shows it.
 *
 * `npm run api:report` writes it to `docs/public-api.md`; `test/unit/architecture/api-report.spec.ts`
 * regenerates it in memory and fails with a diff when the committed file differs, so a change
 * to the public API is a visible diff in review.
 *
 * The declarations are TypeScript's own declaration emit, with the options of
 * `tsconfig.build.json` (so `stripInternal` leaves `@internal` members out, as in `dist/`) and
 * without comments; only the source files that declare a public name are emitted.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const REPORT_PATH = join(ROOT, 'docs', 'public-api.md');

/** One public entry: its package name (`trellis/plugin`) and its source file, from package.json's `exports`. */
export interface Entry {
  readonly name: string;
  readonly file: string;
}

/** The entries of package.json's `exports`, `./dist/x.js` read as the source `x.ts`. */
export function packageEntries(root = ROOT): Entry[] {
  const exports = (
    JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, { import: string }> }
  ).exports;
  return Object.entries(exports).map(([subpath, target]) => ({
    name: subpath === '.' ? 'trellis' : `trellis/${subpath.slice(2)}`,
    file: target.import.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts'),
  }));
}

/** The report's text for `entries`, built from the sources under `root`. */
export function apiReport(root = ROOT, entries = packageEntries(root)): string {
  const program = buildProgram(root, entries);
  const checker = program.getTypeChecker();
  const declarations = new DeclarationEmit(program, root);
  const sections = entries.map((entry) => {
    const source = program.getSourceFile(join(root, entry.file));
    const module = source && checker.getSymbolAtLocation(source);
    if (!module) throw new Error(`api-report: ${entry.file} (${entry.name}) is not a module of the program`);
    const names = checker
      .getExportsOfModule(module)
      .map((symbol) => describeExport(symbol, checker, declarations, root))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const values = names.filter((n) => n.value).length;
    const body = names
      .map((n) => `// ${n.name}: ${n.kind}${n.from ? ` (from ${n.from})` : ''}\n${n.text}`)
      .join('\n\n');
    return `## \`${entry.name}\`\n\n\`${entry.file}\`: ${names.length} names (${values} values, ${names.length - values} types only)\n\n\`\`\`ts\n${body}\n\`\`\`\n`;
  });
  return [
    '# Public API',
    '',
    'Every exported name of every entry of the package (package.json `exports`), with its kind and its',
    'declaration as the published `.d.ts` shows it (`@internal` members left out). Generated from the',
    'sources by `npm run api:report` (`test/support/api-report.ts`); do not edit by hand.',
    '`test/unit/architecture/api-report.spec.ts` fails when this file is out of date: a change to the',
    'public API shows here as a diff. See docs/contributing.md.',
    '',
    ...sections,
  ].join('\n');
}

interface ExportedName {
  readonly name: string;
  readonly kind: string;
  readonly value: boolean;
  /** Set for a name re-exported from a package, e.g. `inversify`. */
  readonly from?: string;
  readonly text: string;
}

function buildProgram(root: string, entries: readonly Entry[]): ts.Program {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.build.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  );
  if (!config) throw new Error('api-report: tsconfig.build.json cannot be read');
  const options: ts.CompilerOptions = {
    ...config.options,
    noEmit: false,
    declaration: true,
    emitDeclarationOnly: true,
    removeComments: true,
    sourceMap: false,
    declarationMap: false,
    incremental: false,
  };
  return ts.createProgram(
    entries.map((entry) => join(root, entry.file)),
    options,
  );
}

/** Each source file's declaration output, emitted once, on demand. */
class DeclarationEmit {
  readonly #emitted = new Map<string, ts.SourceFile>();

  constructor(
    private readonly program: ts.Program,
    private readonly root: string,
  ) {}

  /** The `.d.ts` of `source`, parsed. */
  of(source: ts.SourceFile): ts.SourceFile {
    const known = this.#emitted.get(source.fileName);
    if (known) return known;
    let text = '';
    if (!source.isDeclarationFile) {
      const result = this.program.emit(source, (_name, data) => (text = data), undefined, true);
      if (result.emitSkipped || text === '')
        throw new Error(`api-report: no declarations emitted for ${relative(this.root, source.fileName)}`);
    }
    const parsed = source.isDeclarationFile
      ? source
      : ts.createSourceFile(source.fileName.replace(/\.ts$/, '.d.ts'), text, ts.ScriptTarget.Latest, true);
    this.#emitted.set(source.fileName, parsed);
    return parsed;
  }
}

function describeExport(
  exported: ts.Symbol,
  checker: ts.TypeChecker,
  emit: DeclarationEmit,
  root: string,
): ExportedName {
  const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
  const declarations = symbol.declarations ?? [];
  if (declarations.length === 0) throw new Error(`api-report: ${exported.name} has no declaration`);
  const value = (symbol.flags & ts.SymbolFlags.Value) !== 0;
  const files = [...new Set(declarations.map((d) => d.getSourceFile()))];
  const from = files.map((file) => packageOf(file.fileName)).find((name) => name !== undefined);
  const texts = files.flatMap((file) => declarationTexts(emit.of(file), symbol.name, root, file));
  const renamed = exported.name === symbol.name ? '' : `// exported as ${exported.name}\n`;
  return { name: exported.name, kind: kindOf(symbol), value, from, text: renamed + texts.join('\n') };
}

/**
 * The top-level statements of a `.d.ts` that declare `name`, printed without `export` and
 * `declare`, classes without their private members (not part of the API, though the `.d.ts`
 * lists them); a declaration merged in from another file (`declare module '…' { interface … }`,
 * as the MCP host adds its error codes) is printed with the file it comes from.
 */
function declarationTexts(dts: ts.SourceFile, name: string, root: string, source: ts.SourceFile): string[] {
  const where = relative(root, source.fileName).split(sep).join('/');
  const own = dts.statements.filter((statement) => declaredNames(statement).includes(name));
  const merged = dts.statements.flatMap((statement) =>
    ts.isModuleDeclaration(statement) &&
    ts.isStringLiteral(statement.name) &&
    statement.body &&
    ts.isModuleBlock(statement.body)
      ? statement.body.statements.filter((inner) => declaredNames(inner).includes(name))
      : [],
  );
  if (own.length + merged.length === 0)
    throw new Error(`api-report: ${name} not found in the declarations of ${where}`);
  return [
    ...own.map((statement) => print(statement, name, dts)),
    ...merged.map((statement) => `// merged in by ${where}\n${print(statement, name, dts)}`),
  ];
}

const PRINTER = ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed });

function print(statement: ts.Statement, name: string, dts: ts.SourceFile): string {
  let node: ts.Node = statement;
  if (ts.isClassDeclaration(statement)) {
    node = ts.factory.updateClassDeclaration(
      statement,
      statement.modifiers,
      statement.name,
      statement.typeParameters,
      statement.heritageClauses,
      statement.members.filter((member) => !isPrivate(member)),
    );
  } else if (ts.isVariableStatement(statement) && statement.declarationList.declarations.length > 1) {
    // A variable statement may declare several names: keep the one asked for.
    const list = ts.factory.updateVariableDeclarationList(
      statement.declarationList,
      statement.declarationList.declarations.filter((d) => ts.isIdentifier(d.name) && d.name.text === name),
    );
    node = ts.factory.updateVariableStatement(statement, statement.modifiers, list);
  }
  return PRINTER.printNode(ts.EmitHint.Unspecified, node, dts).replace(/^(export\s+)?(declare\s+)?/, '');
}

function isPrivate(member: ts.ClassElement): boolean {
  return (
    (member.name !== undefined && ts.isPrivateIdentifier(member.name)) ||
    (ts.canHaveModifiers(member) &&
      (ts.getModifiers(member) ?? []).some((m) => m.kind === ts.SyntaxKind.PrivateKeyword))
  );
}

function declaredNames(statement: ts.Statement): string[] {
  if (ts.isVariableStatement(statement))
    return statement.declarationList.declarations.flatMap((d) => (ts.isIdentifier(d.name) ? [d.name.text] : []));
  if (
    ts.isFunctionDeclaration(statement) ||
    ts.isClassDeclaration(statement) ||
    ts.isInterfaceDeclaration(statement) ||
    ts.isTypeAliasDeclaration(statement) ||
    ts.isEnumDeclaration(statement) ||
    ts.isModuleDeclaration(statement)
  ) {
    return statement.name && ts.isIdentifier(statement.name) ? [statement.name.text] : [];
  }
  return [];
}

function kindOf(symbol: ts.Symbol): string {
  const kinds: string[] = [];
  const f = symbol.flags;
  if (f & ts.SymbolFlags.Class) kinds.push('class');
  else if (f & ts.SymbolFlags.Function) kinds.push('function');
  else if (f & ts.SymbolFlags.Enum) kinds.push('enum');
  else if (f & ts.SymbolFlags.Variable) kinds.push(isConst(symbol) ? 'const' : 'variable');
  if (f & ts.SymbolFlags.Interface) kinds.push('interface');
  if (f & ts.SymbolFlags.TypeAlias) kinds.push('type');
  if (f & (ts.SymbolFlags.ValueModule | ts.SymbolFlags.NamespaceModule)) kinds.push('namespace');
  return kinds.join(' + ') || 'unknown';
}

function isConst(symbol: ts.Symbol): boolean {
  const declaration = symbol.valueDeclaration;
  return (
    declaration !== undefined &&
    ts.isVariableDeclaration(declaration) &&
    (ts.getCombinedNodeFlags(declaration) & ts.NodeFlags.Const) !== 0
  );
}

/** `inversify` for a file under node_modules/inversify/; undefined for the project's own. */
function packageOf(fileName: string): string | undefined {
  const match = /[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)[\\/]/.exec(fileName);
  return match?.[1]?.replace(/\\/g, '/');
}

// `npm run api:report`: write the report.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(REPORT_PATH, apiReport());
  console.log(`wrote ${relative(process.cwd(), REPORT_PATH)}`);
}
