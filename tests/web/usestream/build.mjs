// Bundles app.jsx (React, react-dom and the SDK's useStream hook) into one browser script
// with esbuild, from the node_modules folder .ci/run installed package.json into.
//
// Usage: node build.mjs NODE_MODULES OUTFILE
//        (NODE_MODULES is what .ci/run exports as GRAPHKIT_USESTREAM_WEB)

import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const [modules, outfile] = process.argv.slice(2);
if (!modules || !outfile) {
  console.error("usage: node build.mjs NODE_MODULES OUTFILE");
  process.exit(2);
}
const require = createRequire(join(modules, "graphkit-usestream-build.cjs"));
const esbuild = require("esbuild");

await esbuild.build({
  entryPoints: [join(dirname(fileURLToPath(import.meta.url)), "app.jsx")],
  bundle: true,
  outfile,
  format: "iife",
  platform: "browser",
  target: "es2022",
  jsx: "automatic",
  // The sources live here, the packages under target/: resolve bare imports there.
  nodePaths: [modules],
  define: { "process.env.NODE_ENV": '"production"' },
  minify: true,
  logLevel: "warning",
});
