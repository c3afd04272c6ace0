"""Sessions of the tau-bench retail world, built from tau2-bench's retail tasks (there are no
recorded retail trajectories in public_data/): the customer's request as the opening message, the
task's gold actions as the agent's tool calls, and the world's own records (retail_db) as the tool
results, ending with a reply that greets the customer by name and repeats the order id and e-mail.
OpenAI chat format with `info.task.actions`, like the airline trajectories, so `import_sessions
--format openai --intent-from taubench-actions` reads them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ORDER_TOOLS_PREFIXES = ("get_order", "cancel_pending", "modify_pending", "return_delivered", "exchange_delivered")


def _user_for(args: dict[str, Any], users: dict[str, Any]) -> str | None:
    if "user_id" in args:
        return args["user_id"]
    if "email" in args:
        return next((uid for uid, u in users.items() if u["email"] == args["email"]), None)
    if "first_name" in args:
        return next(
            (
                uid
                for uid, u in users.items()
                if u["name"]["first_name"] == args["first_name"]
                and u["name"]["last_name"] == args.get("last_name")
                and u["address"]["zip"] == args.get("zip")
            ),
            None,
        )
    return None


def retail_sessions(directory: Path, *, trials: int = 2) -> list[dict[str, Any]]:
    tasks = json.loads((directory / "tau2_retail_tasks.json").read_text())
    users = json.loads((directory / "retail_db" / "users.json").read_text())
    orders = json.loads((directory / "retail_db" / "orders.json").read_text())
    sessions = []
    for task in tasks:
        instructions = task["user_scenario"]["instructions"]
        opening = " ".join(
            part for part in (instructions.get("reason_for_call"), instructions.get("known_info")) if part
        )
        actions = task["evaluation_criteria"]["actions"] or []
        user_id = None
        order_id = None
        messages: list[dict[str, Any]] = [{"role": "user", "content": opening}]
        for index, action in enumerate(actions):
            args = action.get("arguments") or {}
            call_id = f"call_{task['id']}_{index}"
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": action["name"], "arguments": json.dumps(args)},
                        }
                    ],
                }
            )
            found_user = _user_for(args, users)
            user_id = user_id or found_user
            if action["name"].startswith("find_user_id"):
                result: Any = found_user or "Error: user not found"
            elif action["name"] == "get_user_details":
                result = json.dumps(users.get(args.get("user_id"), {}))
            elif action["name"].startswith(ORDER_TOOLS_PREFIXES) and args.get("order_id") in orders:
                order_id = args["order_id"]
                result = json.dumps(orders[order_id])
                user_id = user_id or orders[order_id]["user_id"]
            else:
                result = json.dumps({"ok": True})
            messages.append({"role": "tool", "tool_call_id": call_id, "name": action["name"], "content": result})
        user = users.get(user_id or "")
        if user is not None:
            name = f"{user['name']['first_name']} {user['name']['last_name']}"
            about = f" Order {order_id} is updated." if order_id else ""
            messages.append(
                {"role": "assistant", "content": f"Thank you, {name}.{about} A confirmation went to {user['email']}."}
            )
        else:
            messages.append({"role": "assistant", "content": "Is there anything else I can help with?"})
        info = {
            "task": {
                "user_id": user_id,
                "actions": [{"name": a["name"], "kwargs": a.get("arguments") or {}} for a in actions],
            }
        }
        for trial in range(trials):
            sessions.append(
                {
                    "session_id": f"retail-task{task['id']}-trial{trial}",
                    "reward": 1.0,
                    "info": info,
                    "messages": messages,
                }
            )
    return sessions
