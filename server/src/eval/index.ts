// Evaluations (`caplo eval`, the team API's eval runs): an agent release's conversations run through the
// real engine with the configured model, reads for real or from fixtures, writes proposed and never run.
export { runEvaluation, parseMinPass, reaches, type EvalResult, type CaseResult, type EvalSettings, type EvalProgress, type EvalInput } from "./evalSuite.ts";
export { progressLine, tableReport, jsonReport, junitReport, xmlText } from "./report.ts";
export { loadEvalCases, resolveEvalRelease, checkCasesAgainst, evalModel, testSecrets, type EvalError, type ReleaseSourceSpec } from "./evalSetup.ts";
export { ReadOnlyRunner, EvalRefusal } from "./readOnlyRunner.ts";
