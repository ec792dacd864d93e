// Import cycles, type-only imports included, as a lint step (`npm run lint`). eslint's own cycle
// rules (eslint-plugin-import(-x) `no-cycle`) skip `import type` edges, and a type-only cycle is the
// kind this project has had (relay/libvirt/* <-> index.ts, a provider <-> registry.ts).
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules must not import each other in a circle, not even for types: move the shared part out.',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    // Follow the TypeScript source before compilation, so `import type` edges count.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules|test-results|coverage|\.egress)/' },
  },
};
