// Checks the tool definitions `oncecall tools export --platform vapi|retell|elevenlabs` prints against
// each platform's own SDK (versions pinned in package-lock.json):
//
//   1. TypeScript: every definition is written into DIR/check.ts as an object literal of the SDK's type
//      for that platform's create-tool request, and `tsc --noEmit` checks them. An object literal gets
//      TypeScript's excess property check, so a key the platform does not list is an error, at any depth.
//        vapi        @vapi-ai/server-sdk        Vapi.CreateToolsRequest.Function
//        retell      retell-sdk                 Retell.LlmCreateParams.CustomTool
//        elevenlabs  @elevenlabs/elevenlabs-js  serialization.ToolRequestModel.Raw (the snake_case wire
//                                                shape of its create-tool request body)
//   2. ElevenLabs' wire JSON through the SDK's own serializer: ToolRequestModel.parse with unknown keys,
//      union members and enum values refused, then serialized back with ToolRequestModel.json: the
//      result must equal the definition, so nothing was dropped or renamed on the way.
//   3. ElevenLabs' rule that a body property takes its value from exactly one source (description: the
//      model gives it; dynamic_variable, is_system_provided, constant_value, is_omitted), which its API
//      documents and its types cannot say.
//
// Usage: node check.mjs DIR, where DIR holds vapi.json, retell.json and elevenlabs.json (each the
// export's JSON array). It writes DIR/check.ts and DIR/tsconfig.json, and ends with the line
// "platform-check: N passed, M failed"; the exit status is 1 when a check failed.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node check.mjs DIR (DIR holds vapi.json, retell.json and elevenlabs.json)");
  process.exit(2);
}

// Each platform: the SDK type its definitions are typed as, and the tool name inside one.
const platforms = [
  { name: "vapi", type: "Vapi.CreateToolsRequest.Function", tool: (d) => d.function?.name },
  { name: "retell", type: "Retell.LlmCreateParams.CustomTool", tool: (d) => d.name },
  { name: "elevenlabs", type: "ElevenLabsWire.ToolRequestModel.Raw", tool: (d) => d.tool_config?.name },
];

let passed = 0;
let failed = 0;
function result(ok, what, detail) {
  if (ok) {
    passed++;
    return;
  }
  failed++;
  console.log(`FAIL ${what}${detail ? `: ${detail}` : ""}`);
}

const defs = {};
for (const p of platforms) {
  defs[p.name] = JSON.parse(readFileSync(path.join(dir, `${p.name}.json`), "utf8"));
  if (!Array.isArray(defs[p.name]) || defs[p.name].length === 0) {
    console.error(`${p.name}.json is not a non-empty JSON array of tool definitions`);
    process.exit(2);
  }
}

// 1. TypeScript.
const ts = [
  "// Written by check.mjs: each exported tool definition as an object literal of its platform's SDK type.",
  'import type { Vapi } from "@vapi-ai/server-sdk";',
  'import type Retell from "retell-sdk";',
  'import type * as ElevenLabsWire from "@elevenlabs/elevenlabs-js/serialization/index.js";',
  "",
];
for (const p of platforms) {
  defs[p.name].forEach((d, i) => {
    ts.push(`export const ${p.name}_${i}_${p.tool(d) ?? "unnamed"}: ${p.type} = ${JSON.stringify(d, null, 2)};`, "");
  });
}
writeFileSync(path.join(dir, "check.ts"), ts.join("\n"));
writeFileSync(
  path.join(dir, "tsconfig.json"),
  JSON.stringify(
    {
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: [],
      },
      files: ["check.ts"],
    },
    null,
    2,
  ),
);
// DIR may be anywhere: the SDKs are found through a link to this folder's node_modules.
if (!existsSync(path.join(dir, "node_modules"))) {
  symlinkSync(path.join(here, "node_modules"), path.join(dir, "node_modules"), "dir");
}
writeFileSync(path.join(dir, "package.json"), JSON.stringify({ private: true, type: "module" }));
const tsc = spawnSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", ".", "--pretty", "false"], {
  cwd: dir,
  encoding: "utf8",
});
const tsErrors = `${tsc.stdout}${tsc.stderr}`.split("\n").filter((l) => l.includes("error TS"));
for (const line of tsErrors) {
  console.log(line);
}
result(tsc.status === 0 && tsErrors.length === 0, "tsc --noEmit check.ts", `${tsErrors.length} errors`);

// 2. ElevenLabs' serializer, both ways.
const serialization = require("@elevenlabs/elevenlabs-js/serialization");
const strict = {
  unrecognizedObjectKeys: "fail",
  allowUnrecognizedUnionMembers: false,
  allowUnrecognizedEnumValues: false,
  skipValidation: false,
};
for (const d of defs.elevenlabs) {
  const name = `elevenlabs ${d.tool_config?.name ?? d.name}`;
  const parsed = serialization.ToolRequestModel.parse(d, strict);
  if (!parsed.ok) {
    result(false, `${name}: ToolRequestModel.parse`, parsed.errors.map((e) => `${e.path.join(".")}: ${e.message}`).join("; "));
    continue;
  }
  const wire = serialization.ToolRequestModel.json(parsed.value, strict);
  if (!wire.ok) {
    result(false, `${name}: ToolRequestModel.json`, wire.errors.map((e) => `${e.path.join(".")}: ${e.message}`).join("; "));
    continue;
  }
  result(canonical(wire.value) === canonical(d), `${name}: the serializer's round trip changed the definition`, canonical(wire.value));

  // 3. One value source per body property.
  const sources = ["description", "dynamic_variable", "is_system_provided", "constant_value", "is_omitted"];
  const props = d.tool_config?.api_schema?.request_body_schema?.properties ?? {};
  for (const [key, prop] of Object.entries(props)) {
    const set = sources.filter((s) => prop[s] !== undefined);
    result(set.length === 1, `${name}: property ${key} sets ${set.length} value sources (${set.join(", ")}), want exactly one`);
  }
}

console.log(`platform-check: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);

// canonical is JSON with object keys sorted, for comparing two values.
function canonical(v) {
  return JSON.stringify(v, (_, x) =>
    x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x,
  );
}
