// An MCP Apps host as the extension's own code makes one: the TypeScript SDK's
// client declares the extension, and ext-apps' app-bridge finds each tool's UI
// resource, which the client reads. Prints what it found as JSON.
// Usage: node apps-host.mjs http://HOST/mcp
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { getToolUiResourceUri, RESOURCE_MIME_TYPE } from "@modelcontextprotocol/ext-apps/app-bridge";
const client = new Client({ name: "ext-apps-host", version: "1.0.0" }, {
  capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: [RESOURCE_MIME_TYPE] } } },
});
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
const { tools } = await client.listTools();
const out = { server: client.getServerCapabilities(), tools: {} };
for (const tool of tools) {
  const uri = getToolUiResourceUri(tool);
  const entry = { uri };
  if (uri) {
    try {
      const res = await client.readResource({ uri });
      entry.contents = res.contents.map(c => ({ uri: c.uri, mimeType: c.mimeType, html: typeof c.text === "string" && c.text.includes("<html") }));
    } catch (e) { entry.error = String(e.message || e); }
  }
  out.tools[tool.name] = entry;
}
console.log(JSON.stringify(out));
await client.close();
