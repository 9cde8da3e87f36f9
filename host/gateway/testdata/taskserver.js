// A stdio MCP server that offers 2025-11-25 tasks and lists its tools on
// two pages, with execution objects (TestExecutionOfAStdioTaskServer).
// It answers plain calls and nothing else of tasks: the test needs only
// its listing and its plain calls.
const readline = require('readline');
const rl = readline.createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const tool = (name, execution) => Object.assign(
  { name, inputSchema: { type: 'object' } }, execution ? { execution } : {});
rl.on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined || m.id === null) return; // notifications
  switch (m.method) {
    case 'initialize':
      return send({ jsonrpc: '2.0', id: m.id, result: {
        protocolVersion: m.params.protocolVersion,
        capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
        serverInfo: { name: 'taskserver', version: '1' } } });
    case 'tools/list':
      if (!m.params || !m.params.cursor) {
        return send({ jsonrpc: '2.0', id: m.id, result: {
          tools: [tool('must', { taskSupport: 'required' })], nextCursor: 'page2' } });
      }
      return send({ jsonrpc: '2.0', id: m.id, result: {
        tools: [tool('may', { taskSupport: 'optional', note: 'kept' }), tool('plain')] } });
    case 'tools/call':
      return send({ jsonrpc: '2.0', id: m.id, result: {
        content: [{ type: 'text', text: 'called ' + m.params.name }] } });
    case 'ping':
      return send({ jsonrpc: '2.0', id: m.id, result: {} });
    default:
      return send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
  }
});
