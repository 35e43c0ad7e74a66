package main

// demoHelp is the help of every --demo flag: what the demo model is, and
// that its failure needs an explicit command (ordinary words never fail).
const demoHelp = `answer with the built-in demo model (no account or key needed; every engine runs on it offline, nothing leaves this machine); the message "/demo error" makes it fail the turn with an API error`
