// The parent's own library; what it does does not matter here, only that it links cairn::cairn publicly.
int agentkit_answer() { return 42; }
