"""The lesson's shared prompts: node 03's system prompt and questions, which node 04 also sends
to vLLM (the same requests in both engines), so neither node's package imports the other's."""

# One 96-byte system prompt (6 full blocks) shared by four questions. A question is asked as
# "Q: <question>\nA:", the form the model was trained to answer.
SYSTEM_PROMPT = (
    "You are a patient teacher. Explain how computers use memory, caches and pages, in plain words.\n\n")
QUESTIONS = (
    "What is a KV cache?",
    "What is attention?",
    "What is a token?",
    "What is preemption?",
)
QUESTION_OPEN, QUESTION_CLOSE = "Q: ", "\nA:"
# Questions offered to students one after another in the prompt box (after the four above).
MORE_QUESTIONS = (
    "What is a block?",
    "What is thrashing?",
    "What is eviction?",
    "What is a page table?",
    "What is a radix tree?",
    "What is a cache hit?",
)
