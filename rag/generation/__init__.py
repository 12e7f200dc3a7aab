"""Stage 6, optional: the answer an LLM gives with the context, and the sources it cites.

prompts    build_prompt: the chat and generation presets (German and English), templates, context windows
llm        chat models over HTTP: Ollama (/api/chat) and OpenAI-compatible (/v1/chat/completions), streamed
citations  which [Quelle N] an answer cites, which sources it never used, which numbers name no source
answer     retrieve -> prompt -> LLM -> citations, as one call (`rag answer`, the Context page)
"""
