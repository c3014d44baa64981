// Sends Messenger messages through the Graph Send API.
export { graphSend, sendBody, type GraphApiConfig, type GraphMessage } from "../meta/api.ts";
