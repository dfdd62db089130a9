"""The store: SQLModel tables, the engine and its sessions, and the migrations between schemas."""
