import time, uuid
from sqlalchemy import text
from cairn_devstack.cairn import CairnStack
from cairn_storage import create_engine
from cairn_storage.scope_hook import _SET

SQL = "SELECT set_config('cairn.tenant_id', $1, true), set_config('cairn.subject_id', $2, true), set_config('cairn.all_subjects', $3, true), set_config('cairn.maintenance', $4, true)"


async def test_timing(stack: CairnStack) -> None:
    engine = create_engine(stack.service_database_url, pool_size=2, max_overflow=0)
    t = str(uuid.uuid4())
    async with engine.connect() as conn:
        await conn.begin()
        for label in ("text", "driver", "text", "driver"):
            n = 1000
            c0 = time.process_time(); w0 = time.perf_counter()
            for i in range(n):
                if label == "text":
                    await conn.execute(_SET, {"t": t, "s": f"s{i}", "a": "", "m": ""})
                else:
                    await conn.exec_driver_sql(SQL, (t, f"s{i}", "", ""))
            print(label, f"cpu {1e3*(time.process_time()-c0)/n:.3f} ms, wall {1e3*(time.perf_counter()-w0)/n:.3f} ms")
        await conn.rollback()
    await engine.dispose()
