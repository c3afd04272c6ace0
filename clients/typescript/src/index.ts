export { httpFailure, outcomeRecord, ProcmemClient, ProcmemError, RecallSession, recallQuery, refusalReason, sessionRecord, toolCallText } from "./client.js";
export type {
  Instruction,
  InstructionOptions,
  OutcomeReport,
  ProcmemClientOptions,
  RecallCall,
  RecallOptions,
  SelectOptions,
  SessionReport,
} from "./client.js";
export {
  CHARS_PER_TOKEN,
  DEFAULT_MAX_CHARS,
  HEADER,
  codePointLength,
  estimateTokens,
  measure,
  provenanceLine,
  pyStrip,
  renderBlock,
  renderProcedure,
  renderProcedures,
  sourceLabel,
} from "./rendering.js";
export {
  DESCRIPTION_MAX,
  SKILL_FILE,
  VERIFY_SCRIPT,
  contentSha256,
  describe,
  idToSkillName,
  quote,
  renderSkill,
  sha256Hex,
  skillBody,
  skillMetadata,
  writeFrontMatter,
} from "./skills.js";
export type { SkillFolder } from "./skills.js";
export type * from "./types.js";
