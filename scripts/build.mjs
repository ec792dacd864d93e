// Bundles each deployable (functions, relay, local launcher, CLI) with esbuild into dist/. A function
// is bundled WITH its dependencies and minified (its cold start is mostly module loading); the relay,
// the launcher and the CLI keep theirs in node_modules.
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const rootPackage = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const builtins = new Set(builtinModules);
const rootRequire = createRequire(join(root, 'package.json'));

/** ESM bundles have no `require`; a CommonJS dependency that calls it still works with this. */
const banner = {
  js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
};

/** ESM has no `__dirname`/`__filename`; bundled CommonJS dependencies that use them get these. */
const functionBanner = {
  js: `${banner.js} import { fileURLToPath as __fileURLToPath } from 'node:url'; const __filename = __fileURLToPath(import.meta.url); const __dirname = __fileURLToPath(new URL('.', import.meta.url));`,
};

/**
 * What a function bundle leaves in node_modules (its package.json lists them): the framework, whose
 * own instance must receive the registration, and the SDKs loaded only on first use (`import()`)
 * that read files beside their own code (protos, package metadata).
 */
const functionExternals = [
  '@google-cloud/functions-framework',
  '@google-cloud/compute',
  '@kubernetes/client-node',
  '@google-cloud/opentelemetry-cloud-trace-exporter',
  '@google-cloud/opentelemetry-cloud-monitoring-exporter',
  '@google-cloud/opentelemetry-resource-util',
  'google-gax',
  // CommonJS only, loaded with import(): as a chunk it would export only `default` (see checkChunks).
  '@opentelemetry/context-async-hooks',
  'google-auth-library',
];

/**
 * A package loaded with import() and bundled as a chunk must be ESM: esbuild gives a CommonJS one's
 * chunk only a `default` export, and `(await import(pkg)).Name` would be undefined at run time.
 *
 * @throws Error naming the package to add to `functionExternals`
 */
function checkChunks(metafile, fn) {
  for (const output of Object.values(metafile.outputs)) {
    const from = output.entryPoint ?? '';
    if (from.includes('node_modules/') && output.exports.length === 1 && output.exports[0] === 'default') {
      throw new Error(
        `functions/${fn}: ${from} is CommonJS loaded with import(): add its package to functionExternals`,
      );
    }
  }
}

/**
 * Requires `@google-cloud/firestore` makes at its top that a function's import does not need, made
 * lazy: its gRPC client (google-gax, @grpc/grpc-js: most of its import time), which its telemetry
 * helper requires only to read a default port when tracing is on; the 316 kB generated protobuf
 * module its serializer uses only in `ObjectValue.set`/`setAll` (pipelines); full protobufjs, which
 * pipelines use only to load a .proto file. Each stays in the bundle and runs on first use. A
 * Firestore whose file differs fails the build.
 */
const lazyFirestoreRequires = [
  {
    file: /[\\/]telemetry[\\/]enabled-trace-util\.js$/,
    eager: 'const v1_1 = require("../v1");',
    lazy: 'const v1_1 = { get FirestoreClient() { return require("../v1").FirestoreClient; } };',
  },
  {
    file: /[\\/]src[\\/]serializer\.js$/,
    eager:
      'const firestore_v1_proto_api_1 = require("../protos/firestore_v1_proto_api");\nvar Value = firestore_v1_proto_api_1.google.firestore.v1.Value;',
    lazy: 'var Value = { fromObject: (object) => require("../protos/firestore_v1_proto_api").google.firestore.v1.Value.fromObject(object) };',
  },
  {
    file: /[\\/]pipelines[\\/]pipelines\.js$/,
    eager: 'const protobufjs_1 = require("protobufjs");',
    lazy: 'const protobufjs_1 = { get load() { return require("protobufjs").load; }, get Type() { return require("protobufjs").Type; } };',
  },
];

const lazyFirestore = {
  name: 'lazy-firestore-requires',
  setup(b) {
    b.onLoad({ filter: /@google-cloud[\\/]firestore[\\/]build[\\/]src[\\/].*\.js$/ }, (args) => {
      const change = lazyFirestoreRequires.find((c) => c.file.test(args.path));
      if (!change) return undefined;
      const text = readFileSync(args.path, 'utf8');
      if (!text.includes(change.eager))
        throw new Error(`${args.path}: no \`${change.eager}\` to make lazy (new Firestore version?)`);
      return { contents: text.replace(change.eager, change.lazy), loader: 'js' };
    });
  },
};

/** esbuild options of one entry: a function bundle, a standalone one, or a bundle whose packages stay external. */
function buildOptions({ entry, outfile, fn, standalone = false, target = 'node20' }) {
  const common = {
    absWorkingDir: root,
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    sourcemap: true,
    metafile: true,
    logLevel: 'warning',
  };
  if (!fn)
    return {
      ...common,
      outfile: join(dist, outfile),
      target,
      packages: standalone ? 'bundle' : 'external',
      banner,
    };
  return {
    ...common,
    // What a function loads with import() (telemetry SDKs) becomes a chunk read on first use.
    outdir: join(dist, dirname(outfile)),
    entryNames: 'index',
    chunkNames: 'chunks/[name]-[hash]',
    splitting: true,
    // ESM builds first: a chunk of a CommonJS package loaded with import() would export only `default`.
    mainFields: ['module', 'main'],
    minify: true,
    // The deployable runs on nodejs22 (infra/terraform/functions.tf).
    target: 'node22',
    sourcesContent: false,
    external: functionExternals,
    banner: functionBanner,
    plugins: [lazyFirestore],
  };
}

/** @returns `[entry, outfile]` pairs for the entries that exist now (parts may still be written). */
function entries() {
  const found = [];
  const functionsDir = join(root, 'functions');
  if (existsSync(functionsDir)) {
    for (const dirent of readdirSync(functionsDir, { withFileTypes: true })) {
      const entry = join('functions', dirent.name, 'index.ts');
      if (dirent.isDirectory() && existsSync(join(root, entry))) {
        found.push({ entry, outfile: join('functions', dirent.name, 'index.js'), fn: dirent.name });
      }
    }
  }
  const fixed = [
    ['relay/main.ts', 'relay/main.js'],
    // Run by install.sh before any `npm ci`: its dependencies are bundled, so node alone runs it.
    ['relay/host-groups-main.ts', 'relay/host-groups.js', { standalone: true }],
    ['infra/local/start.ts', 'local/start.js'],
    ['infra/local/function-instance.ts', 'local/function-instance.js'],
    ['infra/local/traces.ts', 'local/traces.js'],
    ['cli/main.ts', 'cli/main.js'],
  ];
  for (const [entry, outfile, { standalone = false } = {}] of fixed) {
    if (existsSync(join(root, entry))) found.push({ entry, outfile, standalone });
  }
  // The echo VM runs it with Ubuntu 24.04's nodejs package (18.19): nothing outside node: to install.
  if (existsSync(join(root, ECHO_ENTRY))) found.push({ entry: ECHO_ENTRY, outfile: ECHO_BUNDLE, target: 'node18' });
  return found;
}

const ECHO_ENTRY = 'infra/echo/main.ts';
const ECHO_BUNDLE = join('echo', 'echo.mjs');

/**
 * The echo VM's user-data (`dist/echo/user-data.yaml`, read by infra/terraform/echo.tf): the bundle
 * inside the cloud-config infra/echo/user-data.ts#buildEchoUserData writes.
 */
async function buildEchoUserData() {
  const bundle = join(dist, ECHO_BUNDLE);
  if (!existsSync(bundle)) return [];
  const { outputFiles } = await build({
    absWorkingDir: root,
    entryPoints: ['infra/echo/user-data.ts'],
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    write: false,
    logLevel: 'warning',
  });
  const url = pathToFileURL(join(dist, 'echo', '.user-data.mjs'));
  writeFileSync(url, outputFiles[0].text);
  const { buildEchoUserData: render } = await import(url.href);
  rmSync(url);
  writeFileSync(join(dist, 'echo', 'user-data.yaml'), render(readFileSync(bundle, 'utf8')));
  return ['echo/user-data.yaml'];
}

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`; builtins → undefined. */
function packageName(specifier) {
  if (specifier.startsWith('node:') || builtins.has(specifier.split('/')[0])) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** The external packages one build's outputs (a bundle and its chunks) import, with the versions the root package.json pins. */
function dependenciesOf(metafile, outfile) {
  const deps = {};
  for (const imported of Object.values(metafile.outputs).flatMap((output) => output.imports)) {
    const name = imported.external ? packageName(imported.path) : undefined;
    if (!name) continue;
    const version = rootPackage.dependencies?.[name];
    if (!version) {
      throw new Error(`${outfile} imports ${name}, which is not in package.json "dependencies"`);
    }
    deps[name] = version;
  }
  return Object.fromEntries(Object.entries(deps).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * Data packages a bundle reads files from at run time (shared/egress-location/database.ts resolves
 * them with require.resolve, which no import shows): a function whose bundle holds that module
 * depends on them, and only such a function (about 78 MB installed: not the API's business).
 */
const runtimeFiles = {
  'shared/egress-location/database.ts': ['@ip-location-db/geo-whois-asn-country-mmdb', '@ip-location-db/asn'],
};

/** The data packages of {@link runtimeFiles} one build needs, with the versions the root package.json pins. */
function dataDependenciesOf(metafile, outfile) {
  const deps = {};
  for (const [module, packages] of Object.entries(runtimeFiles)) {
    if (!(module in metafile.inputs)) continue;
    for (const name of packages) {
      const version = rootPackage.dependencies?.[name];
      if (!version)
        throw new Error(`${outfile} reads ${name} at run time, which is not in package.json "dependencies"`);
      deps[name] = version;
    }
  }
  return deps;
}

/** A package.json that makes dist/functions/<name>/ a deployable Cloud Functions source. */
function writeFunctionPackage(fn, metafile, outfile) {
  const pkg = {
    name: `${rootPackage.name}-${fn}`,
    version: rootPackage.version,
    private: true,
    type: 'module',
    main: 'index.js',
    engines: { node: '>=22' },
    dependencies: Object.fromEntries(
      Object.entries({ ...dependenciesOf(metafile, outfile), ...dataDependenciesOf(metafile, outfile) }).sort(
        ([a], [b]) => a.localeCompare(b),
      ),
    ),
  };
  writeFileSync(join(dist, 'functions', fn, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
}

/**
 * The dashboard (`GET /` on the api function) as ONE file beside the function: its stylesheets (its
 * own and uPlot's) and its script with uPlot, bundled for the browser, inlined into index.html. No
 * package.json dependency of the function comes of it.
 */
async function buildDashboard() {
  const dir = join(root, 'shared', 'api', 'dashboard');
  const out = join(dist, 'functions', 'api');
  if (!existsSync(join(dir, 'index.html')) || !existsSync(out)) return [];
  const { outputFiles } = await build({
    absWorkingDir: root,
    entryPoints: [join(dir, 'app.ts')],
    tsconfig: join(dir, 'tsconfig.json'),
    bundle: true,
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    minify: true,
    write: false,
    logLevel: 'warning',
  });
  // `</script` inside the bundle would end the inline element early.
  const script = outputFiles[0].text.replace(/<\/(script)/gi, '<\\/$1');
  let inlined = 0;
  const html = readFileSync(join(dir, 'index.html'), 'utf8')
    .replace(/<link rel="stylesheet" href="([\w./-]+\.css)" \/>/g, (_, file) => {
      inlined += 1;
      // A bare name is the dashboard's own sheet; a path is a package's (`uplot/dist/uPlot.min.css`).
      const path = file.includes('/') ? rootRequire.resolve(file) : join(dir, file);
      return `<style>\n${readFileSync(path, 'utf8')}</style>`;
    })
    .replace('<script src="app.ts"></script>', () => {
      inlined += 1;
      return `<script>\n${script}</script>`;
    });
  if (inlined < 2) throw new Error('shared/api/dashboard/index.html: no stylesheet link or no app.ts script to inline');
  writeFileSync(join(out, 'dashboard.html'), html);
  return ['functions/api/dashboard.html'];
}

/**
 * The relay's own manifest and lockfile (dist/relay/package.json, package-lock.json): only the
 * packages its bundle imports, at the versions the root lock resolves, with what those need; so
 * install.sh's `npm ci --omit=dev` on a relay host installs what the relay runs and nothing of the
 * functions' SDKs.
 */
function writeRelayPackage(metafile, outfile) {
  const dependencies = dependenciesOf(metafile, outfile);
  const rootLock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  const packages = rootLock.packages;
  const kept = new Set();
  /** Resolves `name` from the package at `from` as Node does: its node_modules, then each parent's. */
  const resolve = (from, name) => {
    for (let dir = from; ; dir = dir.slice(0, Math.max(0, dir.lastIndexOf('/node_modules/')))) {
      const path = `${dir ? `${dir}/` : ''}node_modules/${name}`;
      if (packages[path]) return path;
      if (!dir) return undefined;
    }
  };
  const visit = (from, names) => {
    for (const name of names) {
      const path = resolve(from, name);
      if (!path) throw new Error(`${outfile}: ${name} (needed by ${from || 'the relay'}) is not in package-lock.json`);
      if (kept.has(path)) continue;
      kept.add(path);
      const entry = packages[path];
      visit(path, Object.keys({ ...entry.dependencies, ...entry.optionalDependencies }));
    }
  };
  visit('', Object.keys(dependencies));
  const pkg = {
    name: `${rootPackage.name}-relay`,
    version: rootPackage.version,
    private: true,
    type: 'module',
    main: 'main.js',
    engines: rootPackage.engines,
    dependencies,
  };
  const { devDependencies: _dev, bin: _bin, ...rootEntry } = packages[''];
  const lock = {
    ...rootLock,
    name: pkg.name,
    packages: {
      '': { ...rootEntry, name: pkg.name, dependencies },
      ...Object.fromEntries(
        [...kept].sort().map((path) => {
          const { dev: _devOnly, devOptional: _devOptional, peer: _peer, ...entry } = packages[path];
          return [path, entry];
        }),
      ),
    },
  };
  writeFileSync(join(dist, 'relay', 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  writeFileSync(join(dist, 'relay', 'package-lock.json'), `${JSON.stringify(lock, null, 2)}\n`);
}

const started = Date.now();
const targets = entries();
rmSync(dist, { recursive: true, force: true });
await Promise.all(
  targets.map(async (target) => {
    const { outfile, fn } = target;
    const result = await build(buildOptions(target));
    if (fn) checkChunks(result.metafile, fn);
    if (fn) writeFunctionPackage(fn, result.metafile, outfile);
    if (outfile === join('relay', 'main.js')) writeRelayPackage(result.metafile, outfile);
    // The CLI is the package's `bin`: esbuild keeps the entry's `#!/usr/bin/env node` first; make it runnable.
    if (outfile === join('cli', 'main.js')) chmodSync(join(dist, outfile), 0o755);
  }),
);
const names = targets.map((t) => t.outfile.replace(/\/(index|main)\.js$|\.js$/, ''));
names.push(...(await buildDashboard()), ...(await buildEchoUserData()));
console.log(
  `built ${targets.length} bundle(s) in ${Date.now() - started} ms: ${names.join(', ') || '(no entries yet)'}`,
);
