// The mcphost ABI 1.0 messages this policy reads and writes (abi/SPEC.md,
// section 5), as json-as classes. Fields the policy does not look at but must
// hand back unchanged (schemas, annotations, _meta) are JSON.Raw: their bytes
// pass through verbatim. Input fields not declared here (caller, and any a
// later minor version adds) are skipped, as the ABI requires.
import { JSON } from "json-as";

@json
export class Describe {
  abi: string = "1.0";
  name: string = "";
  version: string = "";
  hooks: string[] = [];
}

@json
export class Tool {
  name: string = "";
  server: string = "";
  tool: string = "";
  @omitif((self: Tool) => self.title.length == 0)
  title: string = "";
  @omitif((self: Tool) => self.description.length == 0)
  description: string = "";
  @omitnull()
  inputSchema: JSON.Raw | null = null;
  @omitnull()
  outputSchema: JSON.Raw | null = null;
  @omitnull()
  annotations: JSON.Raw | null = null;
  @alias("_meta")
  @omitnull()
  meta: JSON.Raw | null = null;
}

@json
export class ToolsListInput {
  tools: Tool[] = [];
}

@json
export class ToolsListOutput {
  tools: Tool[] = [];
}

@json
export class ToolCallInput {
  name: string = "";
  server: string = "";
  tool: string = "";
  // Absent when the client sent no arguments.
  @omitnull()
  arguments: JSON.Raw | null = null;
}

@json
export class CallDecision {
  action: string = "allow";
  @omitif((self: CallDecision) => self.reason.length == 0)
  reason: string = "";
}
